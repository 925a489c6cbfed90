#include "control/handler_config.h"

#include <rte_config.h>

#include <algorithm>
#include <span>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "control/config_section.h"
#include "control/port_config.h"
#include "dataplane/ectx.h"
#include "dataplane/match_rule.h"
#include "dataplane/pcap_filter.h"
#include "handlers/api/handler.h"
#include "handlers/api/params.h"

namespace spinnic::config_internal {
namespace {

// In-port masks are 64 bits wide; DPDK's port limit must fit in them.
static_assert(RTE_MAX_ETHPORTS <= 64, "MatchRule::in_port_mask is 64 bits");

std::string KnownKinds() {
  std::vector<absl::string_view> names;
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    names.push_back(kind.name);
  }
  return names.empty() ? std::string("(none: this build has no handler kinds)")
                       : absl::StrJoin(names, ", ");
}

absl::Status CheckParams(const v1::HandlerInstall& handler,
                         const HandlerKind& kind, int handler_index,
                         const FieldPath& p, const Reporter& r) {
  // Given keys in text order when known (so the error points at the entry),
  // else sorted (so the first error is the same on every run).
  std::vector<std::string> keys;
  if (r.locations() != nullptr) keys = r.locations()->ParamKeys(handler_index);
  if (keys.size() != static_cast<size_t>(handler.params_size())) {
    keys.clear();
    for (const auto& [key, unused] : handler.params()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
  }
  const bool text_order = r.locations() != nullptr &&
                          keys == r.locations()->ParamKeys(handler_index) &&
                          !keys.empty();
  for (size_t j = 0; j < keys.size(); ++j) {
    auto value = handler.params().find(keys[j]);
    if (value == handler.params().end()) continue;
    const FieldPath at =
        p.Key("params", keys[j], text_order ? static_cast<int>(j) : -1);
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& s : kind.params) {
      if (s.name == keys[j]) spec = &s;
    }
    absl::flat_hash_map<std::string, std::string> one = {
        {value->first, value->second}};
    absl::StatusOr<HandlerParams> checked =
        spec == nullptr
            ? HandlerParams::Validate(kind.params, one)
            : HandlerParams::Validate(std::span<const ParamSpec>(spec, 1), one);
    if (!checked.ok()) {
      return r.Error(at, absl::StrCat("kind ", Quote(kind.name), ": ",
                                      checked.status().message()));
    }
  }
  absl::flat_hash_map<std::string, std::string> given;
  for (const auto& [key, value] : handler.params()) given.emplace(key, value);
  absl::StatusOr<HandlerParams> checked =
      HandlerParams::Validate(kind.params, given);
  if (!checked.ok()) {
    return r.Error(p.F("params"), absl::StrCat("kind ", Quote(kind.name), ": ",
                                               checked.status().message()));
  }
  // The schema says what each value looks like; the kind's factory may also
  // reject combinations or words (count's `by`). Ask it now, while the error
  // can still name a line, rather than at install time.
  absl::StatusOr<HandlerInstance> instance = kind.create(*checked);
  if (!instance.ok()) {
    FieldPath at = p.F("params");
    if (handler.params_size() == 1 && r.locations() != nullptr &&
        r.locations()->ParamKeys(handler_index).size() == 1) {
      at = p.Key("params", handler.params().begin()->first, 0);
    }
    return r.Error(at, absl::StrCat("kind ", Quote(kind.name), ": ",
                                    instance.status().message()));
  }
  return absl::OkStatus();
}

// `message` without its quoted strings (the user's text, C-escaped as
// Quote() writes it), so that a hint is looked for in the message's own
// words only.
std::string WithoutQuotedText(absl::string_view message) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '"') {
      quoted = !quoted;
    } else if (quoted && message[i] == '\\') {
      ++i;  // an escaped character, '"' included
    } else if (!quoted) {
      out += message[i];
    }
  }
  return out;
}

// One side of a match rule's L4 port range.
absl::Status CheckPortRange(const v1::PortRange& range, const FieldPath& p,
                            const Reporter& r) {
  if (range.first() > 0xffff) {
    return r.Error(
        p.F("first"),
        absl::StrCat(range.first(), " is not a TCP/UDP port; use 0..65535"));
  }
  if (range.last() > 0xffff) {
    return r.Error(p.F("last"),
                   absl::StrCat(range.last(),
                                " is not a TCP/UDP port; use 0..65535, or 0 "
                                "for just `first`"));
  }
  if (range.last() != 0 && range.first() > range.last()) {
    return r.Error(
        p.F("last"),
        absl::StrCat(range.last(), " is below first (", range.first(),
                     "); the range is inclusive first..last, so "
                     "write last >= first (or 0 for just first)"));
  }
  return absl::OkStatus();
}

absl::Status CheckMatch(const v1::Config& config, const v1::MatchRule& match,
                        const FieldPath& p, const Reporter& r) {
  absl::flat_hash_set<std::string> port_names;
  for (const v1::Port& port : config.ports()) port_names.insert(port.name());
  for (int j = 0; j < match.in_ports_size(); ++j) {
    if (!port_names.contains(match.in_ports(j))) {
      return r.Error(p.At("in_ports", j),
                     absl::StrCat("no port is named ", Quote(match.in_ports(j)),
                                  "; ports are: ", PortNameList(config),
                                  " (leave in_ports empty for all ports)"));
    }
  }
  const uint32_t ethertype = match.ethertype();
  if (ethertype > 0xffff) {
    return r.Error(p.F("ethertype"),
                   absl::StrFormat("0x%x does not fit in 16 bits; use e.g. "
                                   "0x0800 (IPv4), 0x86DD (IPv6), or 0 for any",
                                   ethertype));
  }
  if (ethertype != 0 && ethertype < 0x0600) {
    return r.Error(p.F("ethertype"),
                   absl::StrFormat("0x%04x is an 802.3 length, not an "
                                   "ethertype (those are 0x0600 and up); use "
                                   "e.g. 0x0800 (IPv4), 0x86DD (IPv6), or 0 "
                                   "for any",
                                   ethertype));
  }
  const bool ip_ethertype =
      ethertype == 0 || ethertype == 0x0800 || ethertype == 0x86dd;
  if (match.has_ip_proto()) {
    if (match.ip_proto() > 255) {
      return r.Error(p.F("ip_proto"),
                     absl::StrCat(match.ip_proto(),
                                  " is not an IP protocol number; use 0..255 "
                                  "(1 ICMP, 6 TCP, 17 UDP, 58 ICMPv6), or "
                                  "leave it out for any"));
    }
    if (!ip_ethertype) {
      return r.Error(p.F("ip_proto"),
                     absl::StrFormat("needs an IP packet but ethertype is "
                                     "0x%04x, so the rule would never match; "
                                     "set ethertype 0x0800, 0x86DD or 0",
                                     ethertype));
    }
  }
  int family = 0;  // 4 or 6 once a prefix fixed it
  const char* family_field = nullptr;
  for (const char* field : {"src_prefix", "dst_prefix"}) {
    const std::string& text = absl::string_view(field) == "src_prefix"
                                  ? match.src_prefix()
                                  : match.dst_prefix();
    if (text.empty()) continue;
    absl::StatusOr<AddressPrefix> prefix = AddressPrefix::Parse(text);
    if (!prefix.ok()) {
      // AddressPrefix::Parse quotes the text and mostly says what to write.
      // Say each once: a prefix without a length is its own address part
      // ("X" in "X" -> "X"), and the example goes only where Parse gives
      // no hint ("; write ..." or "; use ...") of its own.
      const std::string quoted = Quote(text);
      std::string why =
          absl::StrReplaceAll(prefix.status().message(),
                              {{absl::StrCat(quoted, " in ", quoted), quoted}});
      const std::string own_words = WithoutQuotedText(why);
      if (!absl::StrContains(own_words, "; write ") &&
          !absl::StrContains(own_words, "; use ")) {
        absl::StrAppend(&why,
                        "; write e.g. \"10.0.0.0/24\", \"fd00::/64\" or a "
                        "host address");
      }
      return r.Error(p.F(field), why);
    }
    int this_family = prefix->is_ipv4 ? 4 : 6;
    if (family != 0 && family != this_family) {
      return r.Error(p.F(field),
                     absl::StrCat(Quote(text), " is IPv", this_family, " but ",
                                  family_field, " is IPv", family,
                                  "; a packet has one family, so the rule "
                                  "would never match"));
    }
    if ((ethertype == 0x0800 && this_family == 6) ||
        (ethertype == 0x86dd && this_family == 4) || !ip_ethertype) {
      return r.Error(p.F(field),
                     absl::StrFormat("%s is IPv%d but ethertype is 0x%04x, "
                                     "so the rule would never match; make "
                                     "them agree or set ethertype 0",
                                     Quote(text), this_family, ethertype));
    }
    family = this_family;
    family_field = field;
  }
  for (const char* field : {"src_port", "dst_port"}) {
    bool src = absl::string_view(field) == "src_port";
    if (!(src ? match.has_src_port() : match.has_dst_port())) continue;
    if (absl::Status s = CheckPortRange(
            src ? match.src_port() : match.dst_port(), p.F(field), r);
        !s.ok()) {
      return s;
    }
    if (match.has_ip_proto() && match.ip_proto() != 6 &&
        match.ip_proto() != 17) {
      return r.Error(p.F(field),
                     absl::StrCat("L4 ports match only TCP and UDP but "
                                  "ip_proto is ",
                                  match.ip_proto(),
                                  ", so the rule would never match; set "
                                  "ip_proto 6 or 17, or drop the port range"));
    }
    if (!ip_ethertype) {
      return r.Error(p.F(field),
                     absl::StrFormat("L4 ports need an IP packet but "
                                     "ethertype is 0x%04x, so the rule would "
                                     "never match; set ethertype 0x0800, "
                                     "0x86DD or 0",
                                     ethertype));
    }
  }
  if (!match.pcap_filter().empty()) {
    // libpcap only: the EAL may not be up yet (spinnicd checks its config
    // first); Ectx::Create converts and loads it.
    if (absl::Status s = PcapFilter::Check(match.pcap_filter()); !s.ok()) {
      return r.Error(p.F("pcap_filter"), s.message());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHandler(const v1::Config& config,
                          const v1::HandlerInstall& handler, int index,
                          const FieldPath& p, const Reporter& r,
                          absl::flat_hash_map<std::string, int>* names) {
  if (handler.name().empty()) {
    return r.Error(p.F("name"),
                   "missing; give the handler a unique name, e.g. name: "
                   "\"count-icmp\"");
  }
  if (std::string bad = CheckName(handler.name(), kMaxHandlerNameLength, true);
      !bad.empty()) {
    return r.Error(p.F("name"), bad);
  }
  if (names != nullptr) {
    if (auto [it, inserted] = names->emplace(handler.name(), index);
        !inserted) {
      return r.Error(
          p.F("name"),
          absl::StrCat(Quote(handler.name()), " is already the name of ",
                       WhereElse(r, FieldPath().At("handlers", it->second)),
                       "; handler names must be unique"));
    }
  }
  if (handler.kind().empty()) {
    return r.Error(
        p.F("kind"),
        absl::StrCat("missing; set the handler kind, one of: ", KnownKinds()));
  }
  const HandlerKind* kind = FindHandlerKind(handler.kind());
  if (kind == nullptr) {
    return r.Error(p.F("kind"),
                   absl::StrCat(Quote(handler.kind()),
                                " is not a compiled-in handler kind; use "
                                "one of: ",
                                KnownKinds(),
                                " (spinnicd --list_handlers describes "
                                "them)"));
  }
  if (absl::Status s = CheckParams(handler, *kind, index, p, r); !s.ok()) {
    return s;
  }
  if (handler.state_size() > Ectx::kMaxStateSize) {
    return r.Error(
        p.F("state_size"),
        absl::StrCat(handler.state_size(), " bytes is over the limit of ",
                     Ectx::kMaxStateSize, " bytes; use at most ",
                     Ectx::kMaxStateSize));
  }
  if (handler.state_size() != 0 &&
      handler.state_size() < kind->min_state_size) {
    return r.Error(
        p.F("state_size"),
        absl::StrCat(handler.state_size(), " bytes is below the ",
                     kind->min_state_size, " bytes kind ", Quote(kind->name),
                     " needs; use at least ", kind->min_state_size,
                     ", or 0 for that minimum"));
  }
  const uint32_t state_size =
      handler.state_size() != 0 ? handler.state_size() : kind->min_state_size;
  if (handler.initial_state().size() > state_size) {
    return r.Error(
        p.F("initial_state"),
        absl::StrCat(handler.initial_state().size(),
                     " bytes do not fit in the ", state_size,
                     "-byte state; shorten it or set state_size to at "
                     "least ",
                     handler.initial_state().size()));
  }
  if (handler.disable_after_overruns() != 0 && handler.cycle_budget() == 0) {
    return r.Error(p.F("disable_after_overruns"),
                   "is set but cycle_budget is 0 (no budget), so no "
                   "invocation is ever over budget; set cycle_budget or "
                   "remove disable_after_overruns");
  }
  if (absl::Status s = CheckMatch(config, handler.match(), p.F("match"), r);
      !s.ok()) {
    return s;
  }
  return absl::OkStatus();
}

absl::Status CheckHandlers(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  if (static_cast<uint32_t>(config.handlers_size()) > Ectx::kMaxEctxs) {
    return r.Error(root.At("handlers", Ectx::kMaxEctxs),
                   absl::StrCat("at most ", Ectx::kMaxEctxs,
                                " handlers can be installed; remove this one "
                                "and the ones after it"));
  }
  absl::flat_hash_map<std::string, int> names;
  for (int i = 0; i < config.handlers_size(); ++i) {
    if (absl::Status s = CheckHandler(config, config.handlers(i), i,
                                      root.At("handlers", i), r, &names);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HandlerConfig> ConvertHandler(
    const v1::HandlerInstall& handler,
    const absl::flat_hash_map<std::string, uint16_t>& port_index) {
  HandlerConfig h;
  h.name = handler.name();
  h.kind = handler.kind();
  for (const auto& [key, value] : handler.params())
    h.params.emplace(key, value);
  h.state_size = handler.state_size();
  h.initial_state.assign(handler.initial_state().begin(),
                         handler.initial_state().end());
  h.cycle_budget = handler.cycle_budget();
  h.disable_after_overruns = handler.disable_after_overruns();
  h.priority = handler.priority();
  // A transport's messages instead of frames: the section that owns the
  // binding converts it.
  for (const ConfigSection* section : ConfigSections()) {
    if (section->BindingOf(handler, &h.binding)) break;
  }

  const v1::MatchRule& match = handler.match();
  MatchRule& m = h.match;
  if (match.in_ports_size() > 0) {
    m.in_port_mask = 0;
    for (const std::string& name : match.in_ports()) {
      m.in_port_mask |= uint64_t{1} << port_index.at(name);
    }
  }
  m.ethertype = static_cast<uint16_t>(match.ethertype());
  m.match_ip_proto = match.has_ip_proto();
  m.ip_proto = static_cast<uint8_t>(match.ip_proto());
  // Validated above; parse again for the values.
  if (!match.src_prefix().empty()) {
    absl::StatusOr<AddressPrefix> prefix =
        AddressPrefix::Parse(match.src_prefix());
    if (!prefix.ok()) return prefix.status();
    m.match_src = true;
    m.src = *prefix;
  }
  if (!match.dst_prefix().empty()) {
    absl::StatusOr<AddressPrefix> prefix =
        AddressPrefix::Parse(match.dst_prefix());
    if (!prefix.ok()) return prefix.status();
    m.match_dst = true;
    m.dst = *prefix;
  }
  auto range = [](const v1::PortRange& r, uint16_t* first, uint16_t* last) {
    *first = static_cast<uint16_t>(r.first());
    *last = static_cast<uint16_t>(r.last() != 0 ? r.last() : r.first());
  };
  if (match.has_src_port()) {
    range(match.src_port(), &m.src_port_first, &m.src_port_last);
  }
  if (match.has_dst_port()) {
    range(match.dst_port(), &m.dst_port_first, &m.dst_port_last);
  }
  m.pcap_filter = match.pcap_filter();
  return h;
}

}  // namespace spinnic::config_internal

namespace spinnic {

absl::StatusOr<HandlerConfig> ToHandlerConfig(const v1::HandlerInstall& handler,
                                              const v1::Config& running) {
  using config_internal::FieldPath;
  const config_internal::Reporter r(nullptr);
  const FieldPath p = FieldPath().At("handlers", 0);
  // In ValidateConfig's order: the features' bindings, then the handler's
  // own fields.
  for (const config_internal::ConfigSection* section :
       config_internal::ConfigSections()) {
    if (absl::Status s = section->CheckBinding(running, handler, p, r);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          config_internal::CheckHandler(running, handler, 0, p, r, nullptr);
      !s.ok()) {
    return s;
  }
  return config_internal::ConvertHandler(handler,
                                         config_internal::PortIndex(running));
}

}  // namespace spinnic
