#include "control/port_config.h"

#include <rte_config.h>

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace spinnic::config_internal {
namespace {

// "[domain:]bus:device.function[,devargs]" as DPDK takes it.
bool IsPciAddress(absl::string_view text) {
  absl::string_view address = text.substr(0, text.find(','));
  std::vector<absl::string_view> parts = absl::StrSplit(address, ':');
  if (parts.size() != 2 && parts.size() != 3) return false;
  uint32_t value = 0;
  if (parts.size() == 3 && !ParseHexField(parts[0], 1, 8, UINT32_MAX, &value)) {
    return false;
  }
  absl::string_view bus = parts[parts.size() - 2];
  absl::string_view dev_fn = parts.back();
  size_t dot = dev_fn.find('.');
  if (dot == absl::string_view::npos) return false;
  return ParseHexField(bus, 2, 2, 0xff, &value) &&
         ParseHexField(dev_fn.substr(0, dot), 2, 2, 0x1f, &value) &&
         ParseHexField(dev_fn.substr(dot + 1), 1, 1, 7, &value);
}

// Port `p`'s pci or vdev; *device_name is the device as DPDK names it (for
// the one-port-per-device check).
absl::Status CheckDevice(const v1::Port& port, const FieldPath& p,
                         const Reporter& r, std::string* device_name) {
  switch (port.device_case()) {
    case v1::Port::kPci:
      if (!IsPciAddress(port.pci())) {
        return r.Error(
            p.F("pci"),
            absl::StrCat(Quote(port.pci()),
                         " is not a PCI address; write "
                         "domain:bus:device.function as `lspci -D` prints "
                         "it, e.g. pci: \"0000:03:00.0\""));
      }
      *device_name =
          absl::AsciiStrToLower(port.pci().substr(0, port.pci().find(',')));
      if (device_name->size() == 7) *device_name = "0000:" + *device_name;
      break;
    case v1::Port::kVdev: {
      absl::string_view vdev = port.vdev();
      absl::string_view driver = vdev.substr(0, vdev.find(','));
      if (vdev.empty()) {
        return r.Error(p.F("vdev"),
                       "empty; write a DPDK virtual device, e.g. vdev: "
                       "\"net_af_packet0,iface=veth0\" or "
                       "\"net_memif0,role=server,socket=/run/spinnic/"
                       "m0.sock\"");
      }
      bool name_ok = !driver.empty();
      for (char c : driver) name_ok &= IsNameChar(c, false) && c != '-';
      if (!name_ok) {
        return r.Error(p.F("vdev"),
                       absl::StrCat(Quote(vdev),
                                    " does not start with a device name; write "
                                    "<driver><n>[,key=value...], e.g. "
                                    "\"net_af_packet0,iface=veth0\""));
      }
      for (char c : vdev) {
        if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
          return r.Error(p.F("vdev"),
                         absl::StrCat(Quote(vdev),
                                      " contains white space; DPDK device "
                                      "arguments are key=value pairs "
                                      "separated by ',' with no spaces"));
        }
      }
      *device_name = std::string(driver);
      break;
    }
    case v1::Port::DEVICE_NOT_SET:
      return r.Error(p,
                     "no device; set exactly one of pci: "
                     "\"0000:03:00.0\" (a NIC bound to a DPDK driver) or "
                     "vdev: \"net_af_packet0,iface=veth0\" (a DPDK "
                     "virtual device)");
  }
  return absl::OkStatus();
}

absl::Status CheckTransportPacer(const v1::TransportPacer& pacer,
                                 const FieldPath& p, const Reporter& r) {
  if (pacer.passthrough_share_percent() > kMaxPassthroughSharePercent) {
    return r.Error(
        p.F("passthrough_share_percent"),
        absl::StrCat(pacer.passthrough_share_percent(), " is more than ",
                     kMaxPassthroughSharePercent, "; use 0..",
                     kMaxPassthroughSharePercent,
                     " (percent of a congested TX queue kept for passthrough "
                     "frames; at 100 the transports could not even send "
                     "their acknowledgements)"));
  }
  if (pacer.queue_frames() > kMaxPacerQueueFrames) {
    return r.Error(
        p.F("queue_frames"),
        absl::StrCat(pacer.queue_frames(), " is more than ",
                     kMaxPacerQueueFrames, "; use 1..", kMaxPacerQueueFrames,
                     " transport frames waiting per HPU, or 0 for ",
                     kDefaultPacerQueueFrames));
  }
  if (pacer.max_rate_mbps() > kMaxPacerRateMbps) {
    return r.Error(
        p.F("max_rate_mbps"),
        absl::StrCat(pacer.max_rate_mbps(), " Mbit/s is more than ",
                     kMaxPacerRateMbps, "; use 1..", kMaxPacerRateMbps,
                     " Mbit/s per HPU TX queue, or 0 for no ceiling"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPorts(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  if (config.ports_size() == 0) {
    return r.Error(
        root.F("ports"),
        "no ports are configured; add at least one, e.g. ports { name: "
        "\"wire0\" vdev: \"net_af_packet0,iface=veth0\" role: "
        "PORT_ROLE_WIRE }");
  }
  if (config.ports_size() > RTE_MAX_ETHPORTS) {
    return r.Error(root.At("ports", RTE_MAX_ETHPORTS),
                   absl::StrCat(config.ports_size(),
                                " ports are configured but DPDK supports at "
                                "most ",
                                RTE_MAX_ETHPORTS,
                                " (RTE_MAX_ETHPORTS); remove this port and "
                                "the ones after it"));
  }
  absl::flat_hash_map<std::string, int> names;
  absl::flat_hash_map<std::string, int> devices;
  for (int i = 0; i < config.ports_size(); ++i) {
    const v1::Port& port = config.ports(i);
    const FieldPath p = root.At("ports", i);
    if (port.name().empty()) {
      return r.Error(p.F("name"),
                     "missing; give the port a short unique name, e.g. name: "
                     "\"wire0\" (letters, digits, '_' and '-', at most 32 "
                     "characters)");
    }
    if (std::string bad = CheckName(port.name(), kMaxPortNameLength, false);
        !bad.empty()) {
      return r.Error(p.F("name"), bad);
    }
    if (auto [it, inserted] = names.emplace(port.name(), i); !inserted) {
      return r.Error(
          p.F("name"),
          absl::StrCat(Quote(port.name()), " is already the name of ",
                       WhereElse(r, root.At("ports", it->second)),
                       "; port names must be unique"));
    }

    std::string device_name;
    if (absl::Status s = CheckDevice(port, p, r, &device_name); !s.ok()) {
      return s;
    }
    if (auto [it, inserted] = devices.emplace(device_name, i); !inserted) {
      const char* field = port.has_pci() ? "pci" : "vdev";
      return r.Error(
          p.F(field),
          absl::StrCat("device ", Quote(device_name), " is already ",
                       WhereElse(r, root.At("ports", it->second)),
                       "; every port needs its own device (number vdevs: "
                       "net_af_packet0, net_af_packet1, ...)"));
    }

    if (port.role() == v1::PORT_ROLE_UNSPECIFIED) {
      return r.Error(p.F("role"),
                     "not set; write role: PORT_ROLE_WIRE (faces the "
                     "network) or role: PORT_ROLE_HOST (faces the host)");
    }
    if (port.role() != v1::PORT_ROLE_WIRE &&
        port.role() != v1::PORT_ROLE_HOST) {
      return r.Error(p.F("role"),
                     absl::StrCat(static_cast<int>(port.role()),
                                  " is not a port role; write role: "
                                  "PORT_ROLE_WIRE or role: PORT_ROLE_HOST"));
    }
    if (port.queues() > kMaxQueuesPerPort) {
      return r.Error(
          p.F("queues"),
          absl::StrCat(port.queues(), " is more than ", kMaxQueuesPerPort,
                       "; use 1..", kMaxQueuesPerPort,
                       ", or 0 for one queue pair per worker"));
    }
    if (port.mtu() != 0 && (port.mtu() < kMinMtu || port.mtu() > kMaxMtu)) {
      return r.Error(
          p.F("mtu"),
          absl::StrCat(port.mtu(), " is outside ", kMinMtu, "..", kMaxMtu,
                       " bytes; use a value in that range, or 0 to keep the "
                       "device default"));
    }
    for (const char* field : {"rx_descriptors", "tx_descriptors"}) {
      uint32_t value = absl::string_view(field) == "rx_descriptors"
                           ? port.rx_descriptors()
                           : port.tx_descriptors();
      if (value != 0 && (!IsPowerOfTwo(value) || value < kMinDescriptors ||
                         value > kMaxDescriptors)) {
        return r.Error(
            p.F(field),
            absl::StrCat(value, " is not a power of two in ", kMinDescriptors,
                         "..", kMaxDescriptors,
                         "; use 64, 128, 256, 512, 1024, 2048 or 4096, or 0 "
                         "for ",
                         kDefaultDescriptors));
      }
    }
    if (port.has_transport_pacer()) {
      if (absl::Status s = CheckTransportPacer(port.transport_pacer(),
                                               p.F("transport_pacer"), r);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPortPairs(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  absl::flat_hash_set<std::string> port_names;
  for (const v1::Port& port : config.ports()) port_names.insert(port.name());
  absl::flat_hash_map<std::string, int> paired;  // port name -> pair index
  for (int i = 0; i < config.port_pairs_size(); ++i) {
    const v1::PortPair& pair = config.port_pairs(i);
    const FieldPath p = root.At("port_pairs", i);
    for (const char* side : {"a", "b"}) {
      const std::string& name =
          absl::string_view(side) == "a" ? pair.a() : pair.b();
      if (name.empty()) {
        return r.Error(p.F(side),
                       absl::StrCat("missing; name one of the ports (",
                                    PortNameList(config), "), e.g. ", side,
                                    ": \"wire0\""));
      }
      if (!port_names.contains(name)) {
        return r.Error(p.F(side),
                       absl::StrCat("no port is named ", Quote(name),
                                    "; ports are: ", PortNameList(config)));
      }
    }
    if (pair.a() == pair.b()) {
      return r.Error(p.F("b"), absl::StrCat(Quote(pair.b()),
                                            " is also a; a pair joins two "
                                            "different ports"));
    }
    for (const char* side : {"a", "b"}) {
      const std::string& name =
          absl::string_view(side) == "a" ? pair.a() : pair.b();
      if (auto [it, inserted] = paired.emplace(name, i); !inserted) {
        return r.Error(
            p.F(side),
            absl::StrCat("port ", Quote(name), " is already in ",
                         WhereElse(r, root.At("port_pairs", it->second)),
                         "; a port can be in at most one pair"));
      }
    }
  }
  return absl::OkStatus();
}

absl::flat_hash_map<std::string, uint16_t> PortIndex(const v1::Config& config) {
  absl::flat_hash_map<std::string, uint16_t> index;
  for (int i = 0; i < config.ports_size(); ++i) {
    index[config.ports(i).name()] = static_cast<uint16_t>(i);
  }
  return index;
}

void ConvertPorts(const v1::Config& config, DataplaneConfig* out) {
  absl::flat_hash_map<std::string, uint16_t> index;
  for (const v1::Port& port : config.ports()) {
    index[port.name()] = static_cast<uint16_t>(out->ports.size());
    PortConfig& p = out->ports.emplace_back();
    p.name = port.name();
    p.pci = port.pci();
    p.vdev = port.vdev();
    p.role =
        port.role() == v1::PORT_ROLE_HOST ? PortRole::kHost : PortRole::kWire;
    p.queues = static_cast<uint16_t>(port.queues());
    p.mtu = static_cast<uint16_t>(port.mtu());
    p.rx_descriptors =
        static_cast<uint16_t>(port.rx_descriptors() != 0 ? port.rx_descriptors()
                                                         : kDefaultDescriptors);
    p.tx_descriptors =
        static_cast<uint16_t>(port.tx_descriptors() != 0 ? port.tx_descriptors()
                                                         : kDefaultDescriptors);
    p.promiscuous = port.has_promiscuous() ? port.promiscuous() : true;
    p.forward_unchecked = port.forward_unchecked();
    if (port.has_transport_pacer()) {
      const v1::TransportPacer& pacer = port.transport_pacer();
      p.transport_pacer.enabled = true;
      p.transport_pacer.passthrough_share_percent =
          pacer.passthrough_share_percent();
      p.transport_pacer.queue_frames = pacer.queue_frames() != 0
                                           ? pacer.queue_frames()
                                           : kDefaultPacerQueueFrames;
      // Mbit/s to bytes per second.
      p.transport_pacer.rate_bytes_per_s =
          uint64_t{pacer.max_rate_mbps()} * 125'000;
    }
  }
  for (const v1::PortPair& pair : config.port_pairs()) {
    out->port_pairs.emplace_back(index.at(pair.a()), index.at(pair.b()));
  }
}

}  // namespace spinnic::config_internal
