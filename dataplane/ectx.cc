#include "dataplane/ectx.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace spinnic {

absl::StatusOr<std::unique_ptr<Ectx>> Ectx::Create(
    uint32_t id, const HandlerConfig& config,
    std::vector<std::shared_ptr<const MemoryRegion>> regions) {
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("handler '", config.name, "': ", why));
  };
  if (id >= kMaxEctxs) {
    return absl::ResourceExhaustedError(
        absl::StrCat("handler '", config.name, "': at most ", kMaxEctxs,
                     " handlers can be installed; remove one first"));
  }
  if (config.name.empty()) return fail("name is empty; give it a unique name");
  const HandlerKind* kind = FindHandlerKind(config.kind);
  if (kind == nullptr) {
    std::string known;
    for (const HandlerKind& k : RegisteredHandlerKinds()) {
      absl::StrAppend(&known, known.empty() ? "" : ", ", k.name);
    }
    return fail(absl::StrCat("unknown kind '", config.kind,
                             "'; compiled-in kinds: ", known));
  }
  absl::StatusOr<HandlerParams> params =
      HandlerParams::Validate(kind->params, config.params);
  if (!params.ok()) return fail(params.status().message());

  uint32_t needed = kind->min_state_size;
  if (kind->state_size_for != nullptr) {
    needed = std::max(needed, kind->state_size_for(*params));
  }
  uint32_t state_size = config.state_size;
  if (state_size == 0) state_size = needed;
  if (state_size < needed) {
    return fail(absl::StrCat("state_size ", state_size, " is below the ",
                             needed, " bytes kind '", kind->name,
                             "' needs with these parameters; set state_size "
                             "to at least ",
                             needed, " or leave it 0"));
  }
  if (state_size > kMaxStateSize) {
    return fail(absl::StrCat("state_size ", state_size,
                             " exceeds the limit of ", kMaxStateSize,
                             " bytes"));
  }
  if (config.initial_state.size() > state_size) {
    return fail(absl::StrCat("initial_state has ", config.initial_state.size(),
                             " bytes but state_size is ", state_size));
  }
  if (regions.size() < kind->min_regions) {
    return fail(absl::StrCat("kind '", kind->name, "' needs ",
                             kind->min_regions, " bound region(s), got ",
                             regions.size(),
                             "; register a region and list its id in "
                             "bound_regions (spinctl install --bind ID)"));
  }
  absl::StatusOr<HandlerInstance> instance = kind->create(*params);
  if (!instance.ok()) return fail(instance.status().message());
  std::unique_ptr<PcapFilter> filter;
  if (!config.match.pcap_filter.empty()) {
    absl::StatusOr<std::unique_ptr<PcapFilter>> compiled =
        PcapFilter::Compile(config.match.pcap_filter);
    if (!compiled.ok()) {
      return absl::Status(compiled.status().code(),
                          absl::StrCat("handler '", config.name,
                                       "': ", compiled.status().message()));
    }
    filter = *std::move(compiled);
  }

  std::unique_ptr<Ectx> ectx(new Ectx());
  ectx->id_ = id;
  ectx->name_ = config.name;
  ectx->kind_ = kind;
  ectx->instance_ = *std::move(instance);
  ectx->match_ = config.match;
  ectx->filter_ = std::move(filter);
  ectx->params_ = *params;
  ectx->binding_ = config.binding;
  ectx->priority_ = config.priority;
  ectx->cycle_budget_ = config.cycle_budget;
  ectx->disable_after_overruns_ = config.disable_after_overruns;
  ectx->state_size_ = state_size;
  for (const auto& region : regions) {
    ectx->regions_.push_back({.id = region->id(),
                              .bytes = region->bytes(),
                              .readable = (region->access() & kLocalRead) != 0,
                              .writable = (region->access() & kLocalWrite) != 0,
                              .base_address = region->base_address()});
  }
  ectx->region_holders_ = std::move(regions);
  ectx->regions_view_ = ectx->regions_;
  const HandlerOps& ops = *ectx->instance_.ops();
  ectx->payload_only_ = ops.header == nullptr && ops.payload != nullptr &&
                        ops.completion == nullptr;
  ectx->payload_fn_ = ops.payload;
  ectx->payload_self_ = ectx->instance_.self();
  if (state_size > 0) {
    // Cache-line aligned so that handlers' shared words never straddle lines.
    size_t rounded = (state_size + 63) / 64 * 64;
    ectx->state_ = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
    if (ectx->state_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("handler '", config.name, "': cannot allocate ",
                       state_size, " bytes of state"));
    }
    std::memset(ectx->state_, 0, rounded);
    if (!config.initial_state.empty()) {
      std::memcpy(ectx->state_, config.initial_state.data(),
                  config.initial_state.size());
    }
  }
  return ectx;
}

Ectx::~Ectx() { std::free(state_); }

bool Ectx::RecordOverrun() const {
  uint64_t count = overruns_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (disable_after_overruns_ == 0 || count < disable_after_overruns_) {
    return false;
  }
  return !disabled_.exchange(true, std::memory_order_relaxed);
}

}  // namespace spinnic
