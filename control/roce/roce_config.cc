#include "control/roce/roce_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/requester.h"

namespace spinnic::config_internal {
namespace {

// roce.congestion as the dataplane's config (checked: CheckCongestion).
roce::RoceCongestionConfig CongestionOf(const v1::RoceCongestion& cc) {
  roce::RoceCongestionConfig out_cc;
  out_cc.enabled = cc.enabled();
  switch (cc.ecn()) {
    case v1::ROCE_ECN_ECT0:
      out_cc.ecn = roce::kEcnEct0;
      break;
    case v1::ROCE_ECN_ECT1:
      out_cc.ecn = roce::kEcnEct1;
      break;
    case v1::ROCE_ECN_OFF:
      out_cc.ecn = roce::kEcnNotEct;
      break;
    default:
      out_cc.ecn = cc.enabled() ? roce::kEcnEct0 : roce::kEcnNotEct;
      break;
  }
  constexpr uint64_t kMbps = 1'000'000;
  roce::DcqcnParams& p = out_cc.dcqcn;
  if (cc.cnp_interval_us() != 0) {
    out_cc.cnp_interval_ns = uint64_t{cc.cnp_interval_us()} * 1000;
  }
  p.line_rate_bps = cc.line_rate_mbps() * kMbps;  // 0: the port's
  if (cc.min_rate_mbps() != 0) p.min_rate_bps = cc.min_rate_mbps() * kMbps;
  if (cc.has_g()) p.g = cc.g();
  if (cc.alpha_timer_us() != 0) {
    p.alpha_timer_ns = uint64_t{cc.alpha_timer_us()} * 1000;
  }
  if (cc.increase_timer_us() != 0) {
    p.increase_timer_ns = uint64_t{cc.increase_timer_us()} * 1000;
  }
  if (cc.has_byte_counter_bytes()) {
    p.byte_counter_bytes = cc.byte_counter_bytes();
  }
  if (cc.fast_recovery_stages() != 0) {
    p.fast_recovery_stages = cc.fast_recovery_stages();
  }
  if (cc.additive_increase_mbps() != 0) {
    p.additive_increase_bps = cc.additive_increase_mbps() * kMbps;
  }
  if (cc.hyper_increase_mbps() != 0) {
    p.hyper_increase_bps = cc.hyper_increase_mbps() * kMbps;
  }
  if (cc.has_initial_alpha()) p.initial_alpha = cc.initial_alpha();
  p.initial_rate_bps = cc.initial_rate_mbps() * kMbps;  // 0: the line rate
  return out_cc;
}

// roce.congestion: each value in its range, the DCQCN parameters only
// with congestion control on, the rates below the line rate when it is set.
absl::Status CheckCongestion(const v1::Roce& roce, const FieldPath& path,
                             const Reporter& r) {
  if (!roce.has_congestion()) return absl::OkStatus();
  const FieldPath d = path.F("congestion");
  const v1::RoceCongestion& c = roce.congestion();
  if (!c.enabled()) {
    const bool dcqcn_set =
        c.cnp_interval_us() != 0 || c.line_rate_mbps() != 0 ||
        c.min_rate_mbps() != 0 || c.has_g() || c.alpha_timer_us() != 0 ||
        c.increase_timer_us() != 0 || c.has_byte_counter_bytes() ||
        c.fast_recovery_stages() != 0 || c.additive_increase_mbps() != 0 ||
        c.hyper_increase_mbps() != 0 || c.has_initial_alpha() ||
        c.initial_rate_mbps() != 0;
    if (dcqcn_set) {
      return r.Error(d.F("enabled"),
                     "is false but DCQCN parameters are set; they take "
                     "effect only with enabled: true, so set it or remove "
                     "them");
    }
    return absl::OkStatus();
  }
  auto range = [&](const char* field, uint64_t value, uint64_t min,
                   uint64_t max, const char* zero) -> absl::Status {
    if (value != 0 && (value < min || value > max)) {
      return r.Error(d.F(field),
                     absl::StrCat(value, " is not allowed; use ", min, "..",
                                  max, ", or 0 for ", zero));
    }
    return absl::OkStatus();
  };
  const uint64_t line =
      c.line_rate_mbps() != 0 ? c.line_rate_mbps() : 1'600'000;
  for (absl::Status s :
       {range("cnp_interval_us", c.cnp_interval_us(), 1, 1'000'000, "50"),
        range("line_rate_mbps", c.line_rate_mbps(), 1, 1'600'000,
              "the port's link speed"),
        range("min_rate_mbps", c.min_rate_mbps(), 1, line,
              "1 (at most line_rate_mbps)"),
        range("alpha_timer_us", c.alpha_timer_us(), 1, 1'000'000, "55"),
        range("increase_timer_us", c.increase_timer_us(), 1, 1'000'000, "300"),
        range("fast_recovery_stages", c.fast_recovery_stages(), 1, 1000, "5"),
        range("additive_increase_mbps", c.additive_increase_mbps(), 1, line,
              "5 (at most line_rate_mbps)"),
        range("hyper_increase_mbps", c.hyper_increase_mbps(), 1, line,
              "50 (at most line_rate_mbps)"),
        range("initial_rate_mbps", c.initial_rate_mbps(),
              std::max<uint64_t>(c.min_rate_mbps(), 1), line,
              "the line rate (at least min_rate_mbps, at most "
              "line_rate_mbps)")}) {
    if (!s.ok()) return s;
  }
  if (c.has_g() && !(c.g() > 0 && c.g() <= 1)) {
    return r.Error(d.F("g"), absl::StrCat(c.g(),
                                          " is not a gain in (0, 1]; use e.g. "
                                          "0.00390625 (1/256), or remove it"));
  }
  if (c.has_initial_alpha() &&
      !(c.initial_alpha() >= 0 && c.initial_alpha() <= 1)) {
    return r.Error(d.F("initial_alpha"),
                   absl::StrCat(c.initial_alpha(),
                                " is not in [0, 1]; use e.g. 1, or remove it"));
  }
  // The default steps above a configured line rate (a slow link).
  for (const auto& [field, value, fallback] :
       {std::tuple<const char*, uint64_t, uint64_t>{
            "additive_increase_mbps", c.additive_increase_mbps(), 5},
        {"hyper_increase_mbps", c.hyper_increase_mbps(), 50}}) {
    if (c.line_rate_mbps() != 0 && value == 0 && fallback > line) {
      return r.Error(d.F(field),
                     absl::StrCat("is unset, and its default ", fallback,
                                  " Mb/s is above line_rate_mbps ", line,
                                  "; set it to at most ", line));
    }
  }
  // What the defaults make of the rest (e.g. the 50 Mb/s hyper increase
  // step above a configured line rate of 40 Mb/s); at Open again with the
  // port's speed when line_rate_mbps is 0.
  roce::DcqcnParams params = CongestionOf(c).dcqcn;
  if (params.line_rate_bps == 0) params.line_rate_bps = line * 1'000'000;
  if (absl::Status s = roce::ValidateDcqcnParams(params); !s.ok()) {
    return r.Error(d, absl::StrCat("DCQCN: ", s.message(),
                                   " (in roce.congestion that field is in "
                                   "Mb/s or us)"));
  }
  return absl::OkStatus();
}

absl::Status CheckRoceSection(const v1::Config& config, const Reporter& r) {
  if (!config.has_roce()) return absl::OkStatus();
  const FieldPath d = FieldPath().F("roce");
  const v1::Roce& roce = config.roce();
  if (config.addresses().ipv4().empty() && config.addresses().ipv6().empty()) {
    return r.Error(d,
                   "is set but the appliance has no address for RDMA "
                   "clients to reach; add addresses { ipv4: \"192.0.2.10\" } "
                   "and/or addresses { ipv6: \"fd00:1::10\" }");
  }
  if (!roce.port().empty()) {
    bool found = false;
    for (const v1::Port& port : config.ports())
      found |= port.name() == roce.port();
    if (!found) {
      return r.Error(d.F("port"), absl::StrCat(Quote(roce.port()),
                                               " is not a port; use one of ",
                                               PortNameList(config)));
    }
  }
  if (roce.path_mtu() != 0 && roce::PathMtuCode(roce.path_mtu()) == 0) {
    return r.Error(d.F("path_mtu"),
                   absl::StrCat(roce.path_mtu(),
                                " is not an InfiniBand path MTU; use 256, "
                                "512, 1024, 2048 or 4096, or 0 for 4096"));
  }
  absl::flat_hash_map<uint32_t, int> ports;
  for (int i = 0; i < roce.listen_ports_size(); ++i) {
    const uint32_t port = roce.listen_ports(i);
    if (port == 0 || port > 65535) {
      return r.Error(d.At("listen_ports", i),
                     absl::StrCat(port, " is not a port; use 1..65535"));
    }
    if (auto [it, inserted] = ports.emplace(port, i); !inserted) {
      return r.Error(d.At("listen_ports", i),
                     absl::StrCat(port, " is listed twice; remove one"));
    }
  }
  auto range = [&](const char* field, uint64_t value, uint64_t min,
                   uint64_t max, const char* zero) -> absl::Status {
    if (value != 0 && (value < min || value > max)) {
      return r.Error(d.F(field),
                     absl::StrCat(value, " is not allowed; use ", min, "..",
                                  max, ", or 0 for ", zero));
    }
    return absl::OkStatus();
  };
  for (absl::Status s :
       {range("max_qps", roce.max_qps(), 1, 65536, "256"),
        range("ack_every", roce.ack_every(), 1, 4096, "16"),
        range("local_ack_timeout", roce.local_ack_timeout(), 1, 31,
              "14 (about 67 ms)"),
        range("min_rnr_timer", roce.min_rnr_timer(), 1, 31, "12 (0.64 ms)"),
        range("max_rd_atomic", roce.max_rd_atomic(), 1, 16, "16"),
        range("receive_depth", roce.receive_depth(), 1, 4096, "64")}) {
    if (!s.ok()) return s;
  }
  if (absl::Status s = CheckCongestion(roce, d, r); !s.ok()) return s;
  if (roce.min_ack_timeout_us() != 0) {
    if (roce.fixed_ack_timeout()) {
      return r.Error(d.F("min_ack_timeout_us"),
                     "is set but fixed_ack_timeout is true; the floor "
                     "applies only to the adaptive timer: remove "
                     "min_ack_timeout_us, or fixed_ack_timeout");
    }
    // The local ACK timeout is the ceiling: a floor above it means nothing.
    const uint32_t code =
        roce.local_ack_timeout() != 0 ? roce.local_ack_timeout() : 14;
    const uint64_t ceiling_us =
        roce::LocalAckTimeoutNs(static_cast<uint8_t>(std::min(code, 31u))) /
        1000;
    if (roce.min_ack_timeout_us() > ceiling_us) {
      return r.Error(
          d.F("min_ack_timeout_us"),
          absl::StrCat(roce.min_ack_timeout_us(),
                       " is above the local ACK timeout (code ", code, ", ",
                       ceiling_us, " us), the timer's ceiling; use at most ",
                       ceiling_us,
                       " or raise local_ack_timeout, or 0 for 100"));
    }
  }
  {
    // One service per port: each of these selects what a connection does.
    struct ServicePort {
      const char* name;
      FieldPath path;
      uint32_t port;
    };
    const ServicePort service_ports[] = {
        {"naaice_port", d.F("naaice_port"), roce.naaice_port()},
        {"rping_port", d.F("rping_port"), roce.rping_port()},
        {"echo_port", d.F("echo_port"), roce.echo_port()},
        {"perftest_port", d.F("perftest_port"), roce.perftest_port()},
        {"perftest_write_lat.port", d.F("perftest_write_lat").F("port"),
         roce.perftest_write_lat().port()}};
    for (size_t i = 0; i < std::size(service_ports); ++i) {
      const ServicePort& service = service_ports[i];
      if (service.port > 65535) {
        return r.Error(service.path, absl::StrCat(service.port,
                                                  " is not a port; use "
                                                  "1..65535, or 0 for off"));
      }
      for (size_t j = 0; j < i; ++j) {
        if (service.port != 0 && service.port == service_ports[j].port) {
          return r.Error(
              service.path,
              absl::StrCat(service.port, " is already ", service_ports[j].name,
                           "; give each service its own port"));
        }
      }
    }
  }
  if (const int workers = std::max(config.workers_size(), 1);
      roce.qp_hpus() > static_cast<uint32_t>(workers)) {
    return r.Error(
        d.F("qp_hpus"),
        absl::StrCat(roce.qp_hpus(),
                     " HPUs cannot own queue pairs: ", "there are ", workers,
                     " workers; use 1..", workers, ", or 0 for all of them"));
  }
  if (roce.has_zero_copy_min_bytes() && roce.zero_copy_min_bytes() > 65535) {
    return r.Error(d.F("zero_copy_min_bytes"),
                   absl::StrCat(roce.zero_copy_min_bytes(),
                                " is larger than any packet's payload; use "
                                "0..65535 (0: never zero-copy)"));
  }
  if (roce.connection_region_bytes() > (uint64_t{1} << 32)) {
    return r.Error(d.F("connection_region_bytes"),
                   absl::StrCat(roce.connection_region_bytes(),
                                " is more than 4 GiB per connection; lower "
                                "it (0: 1 MiB)"));
  }
  if (roce.perftest_region_bytes() > (uint64_t{1} << 32)) {
    return r.Error(d.F("perftest_region_bytes"),
                   absl::StrCat(roce.perftest_region_bytes(),
                                " is more than 4 GiB per perftest data "
                                "connection; lower it (0: 8 MiB, perftest's "
                                "largest message)"));
  }
  if (roce.has_perftest_write_lat()) {
    const auto& lat = roce.perftest_write_lat();
    const FieldPath lat_path = d.F("perftest_write_lat");
    const uint64_t region = roce.perftest_region_bytes() != 0
                                ? roce.perftest_region_bytes()
                                : uint64_t{1} << 23;
    if (lat.port() == 0) {
      return r.Error(lat_path.F("port"),
                     "is needed: the rdma_cm port the ib_write_lat clients "
                     "use (-p), not another service's");
    }
    if (lat.size() > region) {
      return r.Error(lat_path.F("size"),
                     absl::StrCat(lat.size(),
                                  " bytes do not fit the perftest data "
                                  "region (perftest_region_bytes, ",
                                  region, "); lower it or raise that"));
    }
    if (lat.all_sizes() && region < (uint64_t{1} << 23)) {
      return r.Error(lat_path.F("all_sizes"),
                     absl::StrCat("needs an 8 MiB perftest data region (-a "
                                  "ends at 8 MiB); perftest_region_bytes is ",
                                  region));
    }
    if (lat.iterations() > 1'000'000'000) {
      return r.Error(lat_path.F("iterations"),
                     absl::StrCat(lat.iterations(),
                                  " is more than perftest runs; use "
                                  "1..1000000000 (0: 1000)"));
    }
  }
  if (roce.naaice_max_bytes() > (uint64_t{1} << 34)) {
    return r.Error(d.F("naaice_max_bytes"),
                   absl::StrCat(roce.naaice_max_bytes(),
                                " is more than 16 GiB per connection; lower "
                                "it (0: 64 MiB)"));
  }
  if (roce.has_retry_count() && roce.retry_count() > 7) {
    return r.Error(d.F("retry_count"),
                   absl::StrCat(roce.retry_count(),
                                " is not allowed; the CM carries 3 bits: "
                                "use 0..7"));
  }
  if (roce.has_rnr_retry() && roce.rnr_retry() > 7) {
    return r.Error(d.F("rnr_retry"),
                   absl::StrCat(roce.rnr_retry(),
                                " is not allowed; use 0..7 (7: retry "
                                "forever)"));
  }
  return absl::OkStatus();
}

absl::Status CheckRoceBinding(const v1::Config& config,
                              const v1::HandlerInstall& handler,
                              const FieldPath& p, const Reporter& r);

absl::Status CheckRoce(const v1::Config& config, const Reporter& r) {
  for (int i = 0; i < config.handlers_size(); ++i) {
    if (absl::Status s = CheckRoceBinding(config, config.handlers(i),
                                          FieldPath().At("handlers", i), r);
        !s.ok()) {
      return s;
    }
  }
  return CheckRoceSection(config, r);
}

bool RoceBindingOf(const v1::HandlerInstall& handler, MessageBinding* out) {
  if (handler.roce().has_qpn()) {
    *out = {roce::kBindQp, handler.roce().qpn()};
    return true;
  }
  if (handler.roce().has_naaice_function()) {
    *out = {roce::kBindNaaiceFunction, handler.roce().naaice_function()};
    return true;
  }
  return false;
}

absl::Status CheckRoceBinding(const v1::Config& config,
                              const v1::HandlerInstall& handler,
                              const FieldPath& p, const Reporter& r) {
  const bool function_bound = handler.roce().has_naaice_function();
  if ((handler.kind() == "naaice_function") != function_bound) {
    return r.Error(
        function_bound ? p.F("kind") : p.F("roce"),
        function_bound
            ? "a handler bound to a NAAICE function code must be kind "
              "naaice_function (params { key: \"function\" value: "
              "\"vector_sum\" })"
            : "kind naaice_function runs on NAAICE calls only: bind it "
              "with roce { naaice_function: CODE }");
  }
  if (!handler.has_roce()) return absl::OkStatus();
  if (!config.has_roce()) {
    return r.Error(p.F("roce"), "needs RoCE: add a roce section");
  }
  if (handler.has_match() || handler.has_diad()) {
    return r.Error(p.F(handler.has_match() ? "match" : "diad"),
                   "a handler that takes a queue pair's messages matches "
                   "no frames and no DiAD messages; remove it or `roce`");
  }
  if (function_bound) {
    const uint32_t code = handler.roce().naaice_function();
    if (code == 0 || code > 127) {
      return r.Error(p.F("roce").F("naaice_function"),
                     absl::StrCat(code,
                                  " is not a function code; NAAICE codes "
                                  "are 1..127 (7 bits of the immediate)"));
    }
    if (config.roce().naaice_port() == 0) {
      return r.Error(p.F("roce").F("naaice_function"),
                     "no NAAICE host can call it: set roce.naaice_port");
    }
    return absl::OkStatus();
  }
  if (handler.roce().qpn() < 0x100) {
    return r.Error(p.F("roce").F("qpn"),
                   absl::StrCat(handler.roce().qpn(),
                                " is not a data queue pair; the appliance's "
                                "are 256 (0x100) and up (spinctl qps)"));
  }
  return absl::OkStatus();
}

absl::Status ConvertRoce(const v1::Config& config, DataplaneConfig* out) {
  if (!config.has_roce()) return absl::OkStatus();
  roce::RoceConfig& rc = out->transports.get<roce::RoceConfig>();
  const v1::Roce& c = config.roce();
  rc.enabled = true;
  if (!config.addresses().mac().empty()) {
    ParseMac(config.addresses().mac(), &rc.mac);
  }  // else: the RoCE port's own MAC, filled in by the dataplane
  for (const std::string& text : config.addresses().ipv4()) {
    in_addr v4;
    if (inet_pton(AF_INET, text.c_str(), &v4) != 1) continue;
    std::array<uint8_t, 16>& a = rc.addresses.emplace_back();
    a[10] = a[11] = 0xff;
    std::memcpy(a.data() + 12, &v4, 4);
  }
  for (const std::string& text : config.addresses().ipv6()) {
    std::array<uint8_t, 16>& a = rc.addresses.emplace_back();
    ParseNode(text, &a);
  }
  uint16_t port = kNoPort;
  for (size_t i = 0; i < out->ports.size(); ++i) {
    if (c.port().empty() ? out->ports[i].role == PortRole::kWire
                         : out->ports[i].name == c.port()) {
      port = static_cast<uint16_t>(i);
      break;
    }
  }
  if (port == kNoPort) {
    return absl::InvalidArgumentError(
        "roce: no wire port to reach RDMA clients through; add a port "
        "with role PORT_ROLE_WIRE or set roce.port");
  }
  rc.port = port;
  auto or_default = [](uint32_t value, uint32_t fallback) {
    return value != 0 ? value : fallback;
  };
  rc.path_mtu = or_default(c.path_mtu(), rc.path_mtu);
  rc.max_qps = or_default(c.max_qps(), rc.max_qps);
  rc.qp_hpus = c.qp_hpus();
  if (c.has_zero_copy_min_bytes()) {
    rc.zero_copy_min_bytes = c.zero_copy_min_bytes();
  }
  for (uint32_t p : c.listen_ports()) {
    rc.listen_ports.push_back(static_cast<uint16_t>(p));
  }
  rc.ack_every = or_default(c.ack_every(), rc.ack_every);
  rc.local_ack_timeout = static_cast<uint8_t>(
      or_default(c.local_ack_timeout(), rc.local_ack_timeout));
  rc.adaptive_ack_timeout = !c.fixed_ack_timeout();
  if (c.min_ack_timeout_us() != 0) {
    rc.min_ack_timeout_ns = uint64_t{c.min_ack_timeout_us()} * 1000;
  }
  if (c.has_retry_count()) {
    rc.retry_count = static_cast<uint8_t>(c.retry_count());
  }
  if (c.has_rnr_retry()) rc.rnr_retry = static_cast<uint8_t>(c.rnr_retry());
  rc.min_rnr_timer =
      static_cast<uint8_t>(or_default(c.min_rnr_timer(), rc.min_rnr_timer));
  rc.max_rd_atomic =
      static_cast<uint8_t>(or_default(c.max_rd_atomic(), rc.max_rd_atomic));
  rc.ipv6_udp_checksum = c.ipv6_udp_checksum();
  rc.receive_depth = or_default(c.receive_depth(), rc.receive_depth);
  rc.naaice_port = static_cast<uint16_t>(c.naaice_port());
  if (c.naaice_max_bytes() != 0) rc.naaice_max_bytes = c.naaice_max_bytes();
  rc.rping_port = static_cast<uint16_t>(c.rping_port());
  rc.echo_port = static_cast<uint16_t>(c.echo_port());
  rc.perftest_port = static_cast<uint16_t>(c.perftest_port());
  if (c.connection_region_bytes() != 0) {
    rc.connection_region_bytes = c.connection_region_bytes();
  }
  if (c.perftest_region_bytes() != 0) {
    rc.perftest_region_bytes = c.perftest_region_bytes();
  }
  if (c.has_perftest_write_lat()) {
    const auto& lat = c.perftest_write_lat();
    rc.perftest_write_lat.port = static_cast<uint16_t>(lat.port());
    rc.perftest_write_lat.size =
        or_default(lat.size(), rc.perftest_write_lat.size);
    rc.perftest_write_lat.iterations =
        or_default(lat.iterations(), rc.perftest_write_lat.iterations);
    rc.perftest_write_lat.all_sizes = lat.all_sizes();
  }
  if (c.has_congestion()) rc.congestion = CongestionOf(c.congestion());
  // The CM listens on every service's port.
  for (uint16_t service : {rc.naaice_port, rc.rping_port, rc.perftest_port,
                           rc.perftest_write_lat.port, rc.echo_port}) {
    if (service != 0 &&
        std::find(rc.listen_ports.begin(), rc.listen_ports.end(), service) ==
            rc.listen_ports.end()) {
      rc.listen_ports.push_back(service);
    }
  }
  return absl::OkStatus();
}

}  // namespace

const ConfigSection& RoceConfigSection() {
  static const SectionOf<&CheckRoce, &CheckRoceBinding, &RoceBindingOf,
                         &ConvertRoce>
      section;
  return section;
}

}  // namespace spinnic::config_internal
