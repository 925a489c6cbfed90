#include "control/diad/diad_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace spinnic {
namespace config_internal {
namespace {

absl::Status CheckDiadNode(const v1::Config& config, const Reporter& r) {
  if (!config.addresses().diad_node().empty()) {
    const FieldPath p = FieldPath().F("addresses").F("diad_node");
    in6_addr v6;
    if (absl::StrContains(config.addresses().diad_node(), '/') ||
        inet_pton(AF_INET6, config.addresses().diad_node().c_str(), &v6) != 1) {
      return r.Error(p, absl::StrCat(Quote(config.addresses().diad_node()),
                                     " is not an IPv6 address; write a node "
                                     "address in fc00::/7 without prefix "
                                     "length, e.g. \"fd00:d1ad::1\""));
    }
    if ((v6.s6_addr[0] & 0xfe) != 0xfc) {
      return r.Error(p, absl::StrCat(Quote(config.addresses().diad_node()),
                                     " is not in fc00::/7; DiAD node "
                                     "addresses are unique local addresses, "
                                     "e.g. \"fd00:d1ad::1\""));
    }
    // The port DiAD sends through (ConvertDiad): diad.port, checked with the
    // diad section, or else the first wire port.
    const bool has_wire = std::any_of(
        config.ports().begin(), config.ports().end(),
        [](const v1::Port& port) { return port.role() == v1::PORT_ROLE_WIRE; });
    if (config.diad().port().empty() && !has_wire) {
      return r.Error(p,
                     "DiAD has no wire port to reach peers through; add "
                     "a port with role: PORT_ROLE_WIRE or set diad.port");
    }
  }
  return absl::OkStatus();
}

// diad.peers[index] at `p`. `names` and `nodes` (may be null) hold the
// peers before it; its own are added.
absl::Status CheckDiadPeer(
    const v1::DiadPeer& peer, int index, const FieldPath& p,
    const std::array<uint8_t, 16>& own, const Reporter& r,
    absl::flat_hash_map<std::string, int>* names,
    absl::flat_hash_map<std::array<uint8_t, 16>, int>* nodes) {
  if (peer.name().empty()) {
    return r.Error(p.F("name"), "missing; give the peer a name, e.g. \"b\"");
  }
  if (std::string bad = CheckName(peer.name(), 64, true); !bad.empty()) {
    return r.Error(p.F("name"), bad);
  }
  if (names != nullptr && !names->emplace(peer.name(), index).second) {
    return r.Error(p.F("name"), absl::StrCat(Quote(peer.name()),
                                             " is used twice; peer "
                                             "names must be unique"));
  }
  std::array<uint8_t, 16> node{};
  if (!ParseNode(peer.node(), &node) || (node[0] & 0xfe) != 0xfc) {
    return r.Error(p.F("node"),
                   absl::StrCat(Quote(peer.node()),
                                " is not a node address; write an IPv6 "
                                "address in fc00::/7, e.g. \"fd00:d1ad::2\""));
  }
  if (node == own) {
    return r.Error(
        p.F("node"),
        absl::StrCat(Quote(peer.node()), " is this appliance's own diad_node"));
  }
  if (nodes != nullptr && !nodes->emplace(node, index).second) {
    return r.Error(p.F("node"), absl::StrCat(Quote(peer.node()),
                                             " is listed for two peers"));
  }
  std::array<uint8_t, 6> mac{};
  bool zero = true;
  if (ParseMac(peer.mac(), &mac)) {
    for (uint8_t b : mac) zero &= b == 0;
  }
  if (zero || (mac[0] & 1) != 0) {
    return r.Error(
        p.F("mac"),
        absl::StrCat(Quote(peer.mac()),
                     " is not a unicast MAC; write six hex bytes "
                     "separated by ':', e.g. \"02:00:00:00:00:02\""));
  }
  return absl::OkStatus();
}

// diad.congestion as the dataplane's config; `window_packets` is the
// channel window in force (the window's ceiling).
diad::DiadCongestionConfig CongestionOf(const v1::DiadCongestion& c,
                                        uint32_t window_packets) {
  diad::DiadCongestionConfig out;
  out.enabled = c.enabled();
  diad::DelayWindowParams& p = out.window;
  if (c.target_rtt_us() != 0) {
    p.target_delay_ns = int64_t{c.target_rtt_us()} * 1000;
  }
  if (c.has_additive_increase()) p.additive_increase = c.additive_increase();
  if (c.has_beta()) p.beta = c.beta();
  if (c.has_max_mdf()) p.max_mdf = c.max_mdf();
  if (c.has_min_window()) p.min_window = c.min_window();
  p.max_window = window_packets;
  p.initial_window = c.has_initial_window()
                         ? c.initial_window()
                         : std::min<double>(p.initial_window, window_packets);
  return out;
}

// diad.congestion at `d`: values in range, and none without enabled.
absl::Status CheckDiadCongestion(const v1::Diad& diad, const FieldPath& d,
                                 const Reporter& r) {
  if (!diad.has_congestion()) return absl::OkStatus();
  const FieldPath p = d.F("congestion");
  const v1::DiadCongestion& c = diad.congestion();
  if (!c.enabled()) {
    if (c.target_rtt_us() != 0 || c.has_additive_increase() || c.has_beta() ||
        c.has_max_mdf() || c.has_min_window() || c.has_initial_window()) {
      return r.Error(p.F("enabled"),
                     "is false but window parameters are set; they take "
                     "effect only with enabled: true, so set it or remove "
                     "them");
    }
    return absl::OkStatus();
  }
  const uint32_t window =
      diad.window_packets() != 0 ? diad.window_packets() : 256;
  if (c.target_rtt_us() > 1'000'000) {
    return r.Error(p.F("target_rtt_us"),
                   absl::StrCat(c.target_rtt_us(),
                                " is not allowed; use 1..1000000 (the path's "
                                "base RTT plus the queueing you accept), or 0 "
                                "for 50"));
  }
  auto in = [](double v, double low, double high) {
    return std::isfinite(v) && v > low && v <= high;
  };
  if (c.has_additive_increase() && !in(c.additive_increase(), 0, 1000)) {
    return r.Error(p.F("additive_increase"),
                   absl::StrCat(c.additive_increase(),
                                " is not in (0, 1000]; packets per RTT, "
                                "e.g. 1, or remove it"));
  }
  if (c.has_beta() && !in(c.beta(), 0, 1)) {
    return r.Error(p.F("beta"), absl::StrCat(c.beta(),
                                             " is not in (0, 1]; e.g. 0.8, "
                                             "or remove it"));
  }
  if (c.has_max_mdf() && !(in(c.max_mdf(), 0, 1) && c.max_mdf() < 1)) {
    return r.Error(p.F("max_mdf"),
                   absl::StrCat(c.max_mdf(),
                                " is not in (0, 1); the largest share of the "
                                "window one decrease takes, e.g. 0.5, or "
                                "remove it"));
  }
  if (c.has_min_window() && !in(c.min_window(), 0, window)) {
    return r.Error(p.F("min_window"),
                   absl::StrCat(c.min_window(), " is not in (0, ", window,
                                "] (window_packets); packets, e.g. 1 (below 1 "
                                "a channel paces), or remove it"));
  }
  const double min_window = c.has_min_window() ? c.min_window() : 1.0;
  if (c.has_initial_window() &&
      !(std::isfinite(c.initial_window()) && c.initial_window() >= min_window &&
        c.initial_window() <= window)) {
    return r.Error(p.F("initial_window"),
                   absl::StrCat(c.initial_window(), " is not in [", min_window,
                                ", ", window,
                                "] (min_window..window_packets); packets, "
                                "e.g. 16, or remove it"));
  }
  // Whatever the checks above missed (they mirror it).
  if (absl::Status s =
          diad::ValidateDelayWindowParams(CongestionOf(c, window).window);
      !s.ok()) {
    return r.Error(p, std::string(s.message()));
  }
  return absl::OkStatus();
}

absl::Status CheckDiadSection(const v1::Config& config, const Reporter& r) {
  const FieldPath d = FieldPath().F("diad");
  const v1::Diad& diad = config.diad();
  if (!config.has_diad()) return absl::OkStatus();
  if (config.addresses().diad_node().empty()) {
    return r.Error(d,
                   "is set but addresses.diad_node is not; give the "
                   "appliance a node address, e.g. addresses { diad_node: "
                   "\"fd00:d1ad::1\" }");
  }
  if (!diad.port().empty()) {
    bool found = false;
    for (const v1::Port& port : config.ports())
      found |= port.name() == diad.port();
    if (!found) {
      return r.Error(d.F("port"), absl::StrCat(Quote(diad.port()),
                                               " is not a port; use one of ",
                                               PortNameList(config)));
    }
  }
  if (diad.udp_port() > 65535 || diad.udp_port() == 4791) {
    return r.Error(d.F("udp_port"),
                   absl::StrCat(diad.udp_port(),
                                " is not usable; use 1..65535 except 4791 "
                                "(RoCEv2), or 0 for 4792"));
  }
  if (diad.path_mtu() != 0 &&
      (diad.path_mtu() < 1280 || diad.path_mtu() > 9000)) {
    return r.Error(d.F("path_mtu"),
                   absl::StrCat(diad.path_mtu(),
                                " is outside 1280..9000 (IPv6 needs 1280); "
                                "or 0 for 1500"));
  }
  auto range = [&](const char* field, uint64_t value, uint64_t max,
                   bool power_of_two, const char* zero) -> absl::Status {
    if (value > max || (power_of_two && value != 0 &&
                        !IsPowerOfTwo(static_cast<uint32_t>(value)))) {
      return r.Error(d.F(field),
                     absl::StrCat(value, " is not allowed; use ",
                                  power_of_two ? "a power of two in " : "",
                                  "1..", max, ", or 0 for ", zero));
    }
    return absl::OkStatus();
  };
  for (absl::Status s :
       {range("channels", diad.channels(), diad::kMaxChannels, false, "4"),
        range("max_peers", diad.max_peers(), 4096, false, "64"),
        range("max_message_bytes", diad.max_message_bytes(), 1u << 30, false,
              "16 MiB"),
        range("window_packets", diad.window_packets(), 32768, true, "256"),
        range("max_transactions", diad.max_transactions(), 1024, true, "16"),
        range("ack_every", diad.ack_every(), 32768, false, "16"),
        range("max_retries", diad.max_retries(), 64, false, "8"),
        range("reorder_packets", diad.reorder_packets(), 65536, false,
              "twice window_packets")}) {
    if (!s.ok()) return s;
  }
  if (diad.has_zero_copy_min_bytes() && diad.zero_copy_min_bytes() > 65535) {
    return r.Error(d.F("zero_copy_min_bytes"),
                   absl::StrCat(diad.zero_copy_min_bytes(),
                                " is larger than any packet's payload; use "
                                "0..65535 (0: never zero-copy)"));
  }
  const uint32_t rto = diad.rto_us() != 0 ? diad.rto_us() : 1000;
  const uint32_t rto_max = diad.rto_max_us() != 0 ? diad.rto_max_us() : 16000;
  if (rto_max < rto) {
    return r.Error(d.F("rto_max_us"),
                   absl::StrCat(rto_max, " is below rto_us (", rto,
                                "); the timeout only grows"));
  }
  if (diad.rto_min_us() != 0 && diad.fixed_rto()) {
    return r.Error(d.F("rto_min_us"),
                   "is set but fixed_rto is true; the floor applies only to "
                   "the adaptive timeout: remove rto_min_us, or fixed_rto");
  }
  if (diad.rto_min_us() > rto_max) {
    return r.Error(
        d.F("rto_min_us"),
        absl::StrCat(diad.rto_min_us(), " is above rto_max_us (", rto_max,
                     "); the adaptive timeout lies between them: "
                     "use at most ",
                     rto_max, ", or 0 for ", std::min<uint32_t>(100, rto)));
  }
  if (diad.txn_deadline_ms() != 0) {
    // A transaction must outlive its channel's own loss recovery: below
    // down_after it could expire while the transport still retransmits its
    // request, and a silent peer is the channel's business (UNAVAILABLE).
    diad::ChannelConfig timers;
    timers.rto_ns = uint64_t{rto} * 1000;
    timers.rto_max_ns = uint64_t{rto_max} * 1000;
    timers.max_retries = diad.max_retries() != 0 ? diad.max_retries() : 8;
    const uint64_t down_ms = (diad::DownAfterNs(timers) + 999'999) / 1'000'000;
    if (diad.txn_deadline_ms() < down_ms) {
      return r.Error(
          d.F("txn_deadline_ms"),
          absl::StrCat(
              diad.txn_deadline_ms(), " is below down_after (", down_ms,
              " ms with these timers): a transaction would expire "
              "while its channel still recovers lost packets; use "
              "at least ",
              down_ms, ", or 0 for ", down_ms * diad::kTxnDeadlineDownAfters));
    }
  }
  if (absl::Status s = CheckDiadCongestion(diad, d, r); !s.ok()) return s;
  std::array<uint8_t, 16> own{};
  ParseNode(config.addresses().diad_node(), &own);
  absl::flat_hash_map<std::string, int> names;
  absl::flat_hash_map<std::array<uint8_t, 16>, int> nodes;
  for (int i = 0; i < diad.peers_size(); ++i) {
    if (absl::Status s = CheckDiadPeer(diad.peers(i), i, d.At("peers", i), own,
                                       r, &names, &nodes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

diad::PeerConfig ConvertPeer(const v1::DiadPeer& peer) {
  diad::PeerConfig p;
  p.name = peer.name();
  ParseNode(peer.node(), &p.node);
  ParseMac(peer.mac(), &p.mac);
  p.recovery = peer.recovery() == v1::DiadPeer::SELECTIVE
                   ? diad::Recovery::kSelective
                   : diad::Recovery::kGoBackN;
  return p;
}

absl::Status CheckDiadBinding(const v1::Config& config,
                              const v1::HandlerInstall& handler,
                              const FieldPath& p, const Reporter& r);

absl::Status CheckDiad(const v1::Config& config, const Reporter& r) {
  if (absl::Status s = CheckDiadNode(config, r); !s.ok()) return s;
  for (int i = 0; i < config.handlers_size(); ++i) {
    if (absl::Status s = CheckDiadBinding(config, config.handlers(i),
                                          FieldPath().At("handlers", i), r);
        !s.ok()) {
      return s;
    }
  }
  return CheckDiadSection(config, r);
}

bool DiadBindingOf(const v1::HandlerInstall& handler, MessageBinding* out) {
  if (handler.diad().has_stream_id()) {
    *out = {diad::kBindStream, handler.diad().stream_id()};
    return true;
  }
  if (handler.diad().has_write_region()) {
    *out = {kBindRegionWrites, handler.diad().write_region()};
    return true;
  }
  return false;
}

absl::Status CheckDiadBinding(const v1::Config& config,
                              const v1::HandlerInstall& handler,
                              const FieldPath& p, const Reporter& r) {
  if (!handler.has_diad()) return absl::OkStatus();
  if (config.addresses().diad_node().empty()) {
    return r.Error(p.F("diad"), "needs DiAD: set addresses.diad_node");
  }
  if (handler.diad().stream_id() == 0 && handler.diad().write_region() == 0) {
    return r.Error(p.F("diad"),
                   "names neither a stream nor a region; write diad { "
                   "stream_id: N } (N > 0) or, over gRPC once the "
                   "region is registered, diad { write_region: ID }");
  }
  if (handler.has_match()) {
    return r.Error(p.F("match"),
                   "a handler that takes DiAD messages matches no frames; "
                   "remove `match` or `diad`");
  }
  return absl::OkStatus();
}

absl::Status ConvertDiad(const v1::Config& config, DataplaneConfig* out) {
  if (config.addresses().diad_node().empty()) return absl::OkStatus();
  diad::DiadConfig& d = out->transports.get<diad::DiadConfig>();
  const v1::Diad& c = config.diad();
  d.enabled = true;
  ParseNode(config.addresses().diad_node(), &d.node);
  if (!config.addresses().mac().empty()) {
    ParseMac(config.addresses().mac(), &d.mac);
  }  // else: the DiAD port's own MAC, filled in by the dataplane
  d.port = kNoPort;
  for (size_t i = 0; i < out->ports.size(); ++i) {
    if (c.port().empty() ? out->ports[i].role == PortRole::kWire
                         : out->ports[i].name == c.port()) {
      d.port = static_cast<uint16_t>(i);
      break;
    }
  }
  if (d.port == kNoPort) {
    return absl::InvalidArgumentError(
        "diad: no wire port to reach peers through; add a port with role "
        "PORT_ROLE_WIRE or set diad.port");
  }
  auto or_default = [](uint64_t value, uint64_t fallback) {
    return value != 0 ? value : fallback;
  };
  d.udp_port = static_cast<uint16_t>(or_default(c.udp_port(), d.udp_port));
  d.path_mtu = static_cast<uint16_t>(or_default(c.path_mtu(), d.path_mtu));
  d.channels = static_cast<uint16_t>(or_default(c.channels(), d.channels));
  d.max_peers = static_cast<uint32_t>(or_default(c.max_peers(), d.max_peers));
  d.max_message_bytes = static_cast<uint32_t>(
      or_default(c.max_message_bytes(), d.max_message_bytes));
  diad::ChannelConfig& ch = d.channel;
  ch.window_packets =
      static_cast<uint32_t>(or_default(c.window_packets(), ch.window_packets));
  ch.window_bytes = or_default(c.window_bytes(), ch.window_bytes);
  ch.max_transactions = static_cast<uint32_t>(
      or_default(c.max_transactions(), ch.max_transactions));
  ch.ack_every = static_cast<uint32_t>(or_default(c.ack_every(), ch.ack_every));
  ch.ack_delay_ns =
      or_default(uint64_t{c.ack_delay_us()} * 1000, ch.ack_delay_ns);
  ch.rto_ns = or_default(uint64_t{c.rto_us()} * 1000, ch.rto_ns);
  ch.rto_max_ns = or_default(uint64_t{c.rto_max_us()} * 1000, ch.rto_max_ns);
  ch.max_retries =
      static_cast<uint32_t>(or_default(c.max_retries(), ch.max_retries));
  ch.nack_interval_ns =
      or_default(uint64_t{c.nack_interval_us()} * 1000, ch.nack_interval_ns);
  ch.reorder_packets = c.reorder_packets();
  if (c.has_zero_copy_min_bytes()) {
    d.zero_copy_min_bytes = c.zero_copy_min_bytes();
  }
  ch.adaptive_rto = !c.fixed_rto();
  // The floor defaults to 100 us (a few round trips of a fast LAN path),
  // never above the first timeout the operator chose.
  ch.rto_min_ns = c.rto_min_us() != 0 ? uint64_t{c.rto_min_us()} * 1000
                                      : std::min<uint64_t>(100'000, ch.rto_ns);
  ch.txn_deadline_ns = uint64_t{c.txn_deadline_ms()} * 1'000'000;
  if (c.has_congestion()) {
    d.congestion = CongestionOf(c.congestion(), ch.window_packets);
  }
  for (const v1::DiadPeer& peer : c.peers()) {
    d.peers.push_back(ConvertPeer(peer));
  }
  return absl::OkStatus();
}

}  // namespace

const ConfigSection& DiadConfigSection() {
  static const SectionOf<&CheckDiad, &CheckDiadBinding, &DiadBindingOf,
                         &ConvertDiad>
      section;
  return section;
}

}  // namespace config_internal

absl::StatusOr<diad::PeerConfig> ToPeerConfig(const v1::DiadPeer& peer,
                                              const v1::Config& running) {
  using config_internal::FieldPath;
  const config_internal::Reporter r(nullptr);
  std::array<uint8_t, 16> own{};
  config_internal::ParseNode(running.addresses().diad_node(), &own);
  if (absl::Status s = config_internal::CheckDiadPeer(
          peer, 0, FieldPath().F("diad").At("peers", 0), own, r, nullptr,
          nullptr);
      !s.ok()) {
    return s;
  }
  return config_internal::ConvertPeer(peer);
}

}  // namespace spinnic
