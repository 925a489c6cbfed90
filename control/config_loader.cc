#include "control/config_loader.h"

#include <arpa/inet.h>
#include <rte_config.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "control/default_config.h"
#include "dataplane/ectx.h"
#include "dataplane/match_rule.h"
#include "dataplane/roce/ib_types.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "handlers/api/handler.h"
#include "handlers/api/params.h"

namespace spinnic {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

// In-port masks are 64 bits wide; DPDK's port limit must fit in them.
static_assert(RTE_MAX_ETHPORTS <= 64, "MatchRule::in_port_mask is 64 bits");

constexpr absl::string_view kCommandLine = "command line";
constexpr size_t kMaxConfigBytes = 16u << 20;

// A string value as it appears in an error: quoted, escaped, one line.
std::string Quote(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

// Keeps an error on one line whatever text a value or a callee put into it.
std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"\r", "\\r"}, {"\n", "\\n"}});
}

// A path from the Config root to one value: "ports[1].vdev",
// "handlers[0].params[\"by\"]". Rendered in errors and walked through the
// parse-location tree to find the value's line.
class FieldPath {
 public:
  FieldPath() : type_(v1::Config::descriptor()) {}

  // A singular field, or a whole repeated field.
  FieldPath F(absl::string_view name) const { return Step(name, -1, nullptr); }
  // Element `index` of a repeated field.
  FieldPath At(absl::string_view name, int index) const {
    return Step(name, index, nullptr);
  }
  // The entry of map field `name` with `key`; `text_index` is the entry's
  // position in the text (-1: unknown).
  FieldPath Key(absl::string_view name, absl::string_view key,
                int text_index) const {
    std::string k(key);
    return Step(name, text_index, &k);
  }

  std::string ToString() const {
    std::string out;
    for (const PathStep& step : steps_) {
      if (!out.empty()) out += '.';
      absl::StrAppend(&out, step.field->name());
      if (step.has_key) {
        absl::StrAppend(&out, "[", Quote(step.key), "]");
      } else if (step.field->is_repeated() && step.index >= 0) {
        absl::StrAppend(&out, "[", step.index, "]");
      }
    }
    return out;
  }

  // The 0-based position of the deepest step found in `tree`, or (-1, -1).
  TextFormat::ParseLocation Find(const TextFormat::ParseInfoTree* tree) const {
    TextFormat::ParseLocation best;
    for (const PathStep& step : steps_) {
      if (tree == nullptr) break;
      const FieldDescriptor* field = step.field;
      // Singular fields are indexed -1; a whole repeated field is found at
      // its first occurrence; a map entry whose text position is unknown
      // has no location of its own.
      if (step.has_key && step.index < 0) break;
      int index = field->is_repeated() ? std::max(step.index, 0) : -1;
      TextFormat::ParseLocation here = tree->GetLocation(field, index);
      // `workers: [1, 2, 3]` records one location for the whole list: an
      // element without its own is in the nearest list before it.
      for (int i = index - 1; here.line < 0 && i >= 0; --i) {
        here = tree->GetLocation(field, i);
      }
      if (here.line >= 0) best = here;
      if (field->type() != FieldDescriptor::TYPE_MESSAGE ||
          (field->is_repeated() && step.index < 0)) {
        break;
      }
      tree = tree->GetTreeForNested(field, index);
    }
    return best;
  }

 private:
  struct PathStep {
    const FieldDescriptor* field;
    int index;
    bool has_key;
    std::string key;
  };

  FieldPath Step(absl::string_view name, int index,
                 const std::string* key) const {
    const FieldDescriptor* field =
        type_ == nullptr ? nullptr : type_->FindFieldByName(std::string(name));
    // Paths are spelled in this file; a wrong one is a bug the unit tests
    // hit at once.
    if (field == nullptr) {
      std::fprintf(stderr, "config_loader: no field %s in %s\n",
                   std::string(name).c_str(),
                   type_ == nullptr ? "(scalar)" : type_->full_name().c_str());
      std::abort();
    }
    FieldPath next = *this;
    next.steps_.push_back(PathStep{field, index, key != nullptr,
                                   key != nullptr ? *key : std::string()});
    next.type_ = field->message_type();
    if (field->is_map()) {
      next.type_ =
          field->message_type()->FindFieldByName("value")->message_type();
    }
    return next;
  }

  const Descriptor* type_;
  std::vector<PathStep> steps_;
};

// Formats errors as `<source>:<line>:<col>: <path>: <message>`.
class Reporter {
 public:
  explicit Reporter(const ConfigLocations* locations) : locations_(locations) {}

  absl::Status Error(const FieldPath& path, absl::string_view message) const {
    std::string where = path.ToString();
    std::string prefix;
    if (locations_ != nullptr) {
      std::string source = locations_->source_name().empty()
                               ? std::string("config")
                               : locations_->source_name();
      if (locations_->IsOverridden(where)) {
        prefix = absl::StrCat(kCommandLine, ": ");
      } else {
        TextFormat::ParseLocation at = path.Find(locations_->tree());
        prefix = at.line >= 0 ? absl::StrCat(source, ":", at.line + 1, ":",
                                             at.column + 1, ": ")
                              : absl::StrCat(source, ": ");
      }
    }
    return absl::InvalidArgumentError(
        OneLine(absl::StrCat(prefix, where, ": ", message)));
  }

  // The 1-based line of a path's value, for "first on line N" hints; 0 when
  // unknown.
  int Line(const FieldPath& path) const {
    if (locations_ == nullptr) return 0;
    return path.Find(locations_->tree()).line + 1;
  }

  const ConfigLocations* locations() const { return locations_; }

 private:
  const ConfigLocations* locations_;
};

std::string WhereElse(const Reporter& reporter, const FieldPath& other) {
  int line = reporter.Line(other);
  return line > 0 ? absl::StrCat(other.ToString(), " on line ", line)
                  : other.ToString();
}

bool IsNameChar(char c, bool allow_dot) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '-' || (allow_dot && c == '.');
}

// "" when `name` is fine, else what is wrong with it.
std::string CheckName(absl::string_view name, size_t max_length,
                      bool allow_dot) {
  absl::string_view allowed = allow_dot ? "letters, digits, '_', '-' and '.'"
                                        : "letters, digits, '_' and '-'";
  for (char c : name) {
    if (!IsNameChar(c, allow_dot)) {
      return absl::StrCat(Quote(name), " contains ",
                          Quote(absl::string_view(&c, 1)), "; use only ",
                          allowed);
    }
  }
  if (name.size() > max_length) {
    return absl::StrCat(Quote(name), " is ", name.size(),
                        " characters long; use at most ", max_length);
  }
  return "";
}

std::string PortNameList(const v1::Config& config) {
  std::vector<std::string> names;
  for (const v1::Port& port : config.ports()) {
    if (!port.name().empty()) names.push_back(port.name());
  }
  return names.empty() ? std::string("(no named ports)")
                       : absl::StrJoin(names, ", ");
}

std::string KnownKinds() {
  std::vector<absl::string_view> names;
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    names.push_back(kind.name);
  }
  return names.empty() ? std::string("(none: this build has no handler kinds)")
                       : absl::StrJoin(names, ", ");
}

bool ParseHexField(absl::string_view text, size_t min_digits, size_t max_digits,
                   uint32_t max_value, uint32_t* out) {
  if (text.size() < min_digits || text.size() > max_digits) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleHexAtoi(text, out) && *out <= max_value;
}

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

bool ParseMac(absl::string_view text, std::array<uint8_t, 6>* mac) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 6) return false;
  for (size_t i = 0; i < 6; ++i) {
    uint32_t byte = 0;
    if (!ParseHexField(parts[i], 2, 2, 0xff, &byte)) return false;
    (*mac)[i] = static_cast<uint8_t>(byte);
  }
  return true;
}

bool IsPowerOfTwo(uint32_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

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
        device_name =
            absl::AsciiStrToLower(port.pci().substr(0, port.pci().find(',')));
        if (device_name.size() == 7) device_name = "0000:" + device_name;
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
          return r.Error(
              p.F("vdev"),
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
        device_name = std::string(driver);
        break;
      }
      case v1::Port::DEVICE_NOT_SET:
        return r.Error(p,
                       "no device; set exactly one of pci: "
                       "\"0000:03:00.0\" (a NIC bound to a DPDK driver) or "
                       "vdev: \"net_af_packet0,iface=veth0\" (a DPDK "
                       "virtual device)");
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

absl::Status CheckWorkers(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  if (config.main_lcore() > kMaxCoreId) {
    return r.Error(root.F("main_lcore"),
                   absl::StrCat("core ", config.main_lcore(),
                                " is out of range; cores are 0..", kMaxCoreId));
  }
  if (config.workers_size() == 0) {
    return r.Error(root.F("workers"),
                   "no worker cores; add at least one, e.g. workers: [1] (one "
                   "HPU worker on core 1)");
  }
  // Lcore ids are dense: the main lcore is 0, workers 1..N.
  if (config.workers_size() > RTE_MAX_LCORE - 1) {
    return r.Error(root.At("workers", RTE_MAX_LCORE - 1),
                   absl::StrCat(config.workers_size(),
                                " workers, but DPDK supports ", RTE_MAX_LCORE,
                                " lcores (RTE_MAX_LCORE) and the main lcore "
                                "takes one; use at most ",
                                RTE_MAX_LCORE - 1, " workers"));
  }
  absl::flat_hash_map<uint32_t, int> seen;
  for (int i = 0; i < config.workers_size(); ++i) {
    uint32_t core = config.workers(i);
    const FieldPath p = root.At("workers", i);
    if (core > kMaxCoreId) {
      return r.Error(
          p, absl::StrCat("core ", core, " is out of range; cores are 0..",
                          kMaxCoreId));
    }
    if (core == config.main_lcore()) {
      return r.Error(
          p, absl::StrCat("core ", core,
                          " is also main_lcore, which never handles packets; "
                          "put this worker on another core or change "
                          "main_lcore"));
    }
    if (auto [it, inserted] = seen.emplace(core, i); !inserted) {
      return r.Error(
          p, absl::StrCat("core ", core, " is already workers[", it->second,
                          "]; each worker needs its own core"));
    }
  }
  return absl::OkStatus();
}

// Checks one of the appliance's own unicast addresses; `family` AF_INET or
// AF_INET6. Returns the 16-byte form (IPv4 mapped) in *out.
absl::Status CheckOwnAddress(const Reporter& r, const FieldPath& p,
                             const std::string& text, int family,
                             std::array<uint8_t, 16>* out) {
  absl::string_view example =
      family == AF_INET ? "\"192.0.2.10\"" : "\"fd00:1::10\"";
  if (absl::StrContains(text, '/')) {
    return r.Error(p, absl::StrCat(Quote(text),
                                   " has a prefix length; write the address "
                                   "alone, e.g. ",
                                   example));
  }
  out->fill(0);
  if (family == AF_INET) {
    in_addr v4;
    if (inet_pton(AF_INET, text.c_str(), &v4) != 1) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not an IPv4 address; write dotted "
                                     "decimal, e.g. ",
                                     example));
    }
    (*out)[10] = 0xff;
    (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, &v4, 4);
    uint8_t first = (*out)[12];
    uint32_t host = ntohl(v4.s_addr);
    if (host == 0 || host == 0xffffffffu || (first & 0xf0) == 0xe0) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not a unicast address and cannot "
                                     "be the appliance's own; use e.g. ",
                                     example));
    }
  } else {
    in6_addr v6;
    if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) {
      return r.Error(
          p, absl::StrCat(Quote(text), " is not an IPv6 address; write e.g. ",
                          example));
    }
    std::memcpy(out->data(), &v6, 16);
    bool all_zero = true;
    for (uint8_t byte : *out) all_zero &= byte == 0;
    if (all_zero || (*out)[0] == 0xff) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not a unicast address and cannot "
                                     "be the appliance's own; use e.g. ",
                                     example));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAddresses(const v1::Config& config, const Reporter& r) {
  const FieldPath a = FieldPath().F("addresses");
  const v1::Addresses& addresses = config.addresses();
  if (!addresses.mac().empty()) {
    std::array<uint8_t, 6> mac{};
    if (!ParseMac(addresses.mac(), &mac)) {
      return r.Error(a.F("mac"),
                     absl::StrCat(Quote(addresses.mac()),
                                  " is not a MAC address; write six hex bytes "
                                  "separated by ':', e.g. "
                                  "\"02:00:00:00:00:01\", or leave it out to "
                                  "use the first wire port's MAC"));
    }
    bool all_zero = true;
    for (uint8_t byte : mac) all_zero &= byte == 0;
    if (all_zero || (mac[0] & 1) != 0) {
      return r.Error(a.F("mac"),
                     absl::StrCat(Quote(addresses.mac()),
                                  " is not a unicast MAC (all zeros, or the "
                                  "multicast bit of the first byte is set); "
                                  "use e.g. \"02:00:00:00:00:01\""));
    }
  }
  absl::flat_hash_map<std::array<uint8_t, 16>, FieldPath> seen;
  for (const char* list : {"ipv4", "ipv6"}) {
    bool v4 = absl::string_view(list) == "ipv4";
    const auto& texts = v4 ? addresses.ipv4() : addresses.ipv6();
    for (int i = 0; i < texts.size(); ++i) {
      const FieldPath p = a.At(list, i);
      std::array<uint8_t, 16> bytes{};
      if (absl::Status s =
              CheckOwnAddress(r, p, texts[i], v4 ? AF_INET : AF_INET6, &bytes);
          !s.ok()) {
        return s;
      }
      if (auto [it, inserted] = seen.emplace(bytes, p); !inserted) {
        return r.Error(p,
                       absl::StrCat(Quote(texts[i]), " is listed twice (",
                                    WhereElse(r, it->second), "); remove one"));
      }
    }
  }
  if (!addresses.diad_node().empty()) {
    const FieldPath p = a.F("diad_node");
    in6_addr v6;
    if (absl::StrContains(addresses.diad_node(), '/') ||
        inet_pton(AF_INET6, addresses.diad_node().c_str(), &v6) != 1) {
      return r.Error(p, absl::StrCat(Quote(addresses.diad_node()),
                                     " is not an IPv6 address; write a node "
                                     "address in fc00::/7 without prefix "
                                     "length, e.g. \"fd00:d1ad::1\""));
    }
    if ((v6.s6_addr[0] & 0xfe) != 0xfc) {
      return r.Error(p, absl::StrCat(Quote(addresses.diad_node()),
                                     " is not in fc00::/7; DiAD node "
                                     "addresses are unique local addresses, "
                                     "e.g. \"fd00:d1ad::1\""));
    }
  }
  return absl::OkStatus();
}

constexpr uint16_t kNoDiadPort = 0xffff;

bool ParseNode(const std::string& text, std::array<uint8_t, 16>* node) {
  in6_addr v6;
  if (absl::StrContains(text, '/') ||
      inet_pton(AF_INET6, text.c_str(), &v6) != 1) {
    return false;
  }
  std::memcpy(node->data(), v6.s6_addr, 16);
  return true;
}

absl::Status CheckRoce(const v1::Config& config, const Reporter& r) {
  for (int i = 0; i < config.handlers_size(); ++i) {
    const v1::HandlerInstall& handler = config.handlers(i);
    const FieldPath p = FieldPath().At("handlers", i);
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
    if (!handler.has_roce()) continue;
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
      continue;
    }
    if (handler.roce().qpn() < 0x100) {
      return r.Error(p.F("roce").F("qpn"),
                     absl::StrCat(handler.roce().qpn(),
                                  " is not a data queue pair; the appliance's "
                                  "are 256 (0x100) and up (spinctl qps)"));
    }
  }
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
  {
    // One service per port: each of these selects what a connection does.
    const std::pair<const char*, uint32_t> service_ports[] = {
        {"naaice_port", roce.naaice_port()},
        {"rping_port", roce.rping_port()},
        {"perftest_port", roce.perftest_port()}};
    for (size_t i = 0; i < std::size(service_ports); ++i) {
      const auto& [field, port] = service_ports[i];
      if (port > 65535) {
        return r.Error(d.F(field), absl::StrCat(port,
                                                " is not a port; use "
                                                "1..65535, or 0 for off"));
      }
      for (size_t j = 0; j < i; ++j) {
        if (port != 0 && port == service_ports[j].second) {
          return r.Error(
              d.F(field),
              absl::StrCat(port, " is already ", service_ports[j].first,
                           "; give each service its own port"));
        }
      }
    }
  }
  if (roce.connection_region_bytes() > (uint64_t{1} << 32)) {
    return r.Error(d.F("connection_region_bytes"),
                   absl::StrCat(roce.connection_region_bytes(),
                                " is more than 4 GiB per connection; lower "
                                "it (0: 1 MiB)"));
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

absl::Status CheckDiad(const v1::Config& config, const Reporter& r) {
  const FieldPath d = FieldPath().F("diad");
  const v1::Diad& diad = config.diad();
  for (int i = 0; i < config.handlers_size(); ++i) {
    const v1::HandlerInstall& handler = config.handlers(i);
    if (!handler.has_diad()) continue;
    const FieldPath p = FieldPath().At("handlers", i).F("diad");
    if (config.addresses().diad_node().empty()) {
      return r.Error(p, "needs DiAD: set addresses.diad_node");
    }
    if (handler.diad().stream_id() == 0 && handler.diad().write_region() == 0) {
      return r.Error(p,
                     "names neither a stream nor a region; write diad { "
                     "stream_id: N } (N > 0) or, over gRPC once the "
                     "region is registered, diad { write_region: ID }");
    }
    if (handler.has_match()) {
      return r.Error(FieldPath().At("handlers", i).F("match"),
                     "a handler that takes DiAD messages matches no frames; "
                     "remove `match` or `diad`");
    }
  }
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
        range("max_retries", diad.max_retries(), 64, false, "8")}) {
    if (!s.ok()) return s;
  }
  const uint32_t rto = diad.rto_us() != 0 ? diad.rto_us() : 1000;
  const uint32_t rto_max = diad.rto_max_us() != 0 ? diad.rto_max_us() : 16000;
  if (rto_max < rto) {
    return r.Error(d.F("rto_max_us"),
                   absl::StrCat(rto_max, " is below rto_us (", rto,
                                "); the timeout only grows"));
  }
  std::array<uint8_t, 16> own{};
  ParseNode(config.addresses().diad_node(), &own);
  absl::flat_hash_map<std::string, int> names;
  absl::flat_hash_map<std::array<uint8_t, 16>, int> nodes;
  for (int i = 0; i < diad.peers_size(); ++i) {
    const v1::DiadPeer& peer = diad.peers(i);
    const FieldPath p = d.At("peers", i);
    if (peer.name().empty()) {
      return r.Error(p.F("name"), "missing; give the peer a name, e.g. \"b\"");
    }
    if (std::string bad = CheckName(peer.name(), 64, true); !bad.empty()) {
      return r.Error(p.F("name"), bad);
    }
    if (auto [it, inserted] = names.emplace(peer.name(), i); !inserted) {
      return r.Error(p.F("name"), absl::StrCat(Quote(peer.name()),
                                               " is used twice; peer "
                                               "names must be unique"));
    }
    std::array<uint8_t, 16> node{};
    if (!ParseNode(peer.node(), &node) || (node[0] & 0xfe) != 0xfc) {
      return r.Error(
          p.F("node"),
          absl::StrCat(Quote(peer.node()),
                       " is not a node address; write an IPv6 "
                       "address in fc00::/7, e.g. \"fd00:d1ad::2\""));
    }
    if (node == own) {
      return r.Error(p.F("node"),
                     absl::StrCat(Quote(peer.node()),
                                  " is this appliance's own diad_node"));
    }
    if (auto [it, inserted] = nodes.emplace(node, i); !inserted) {
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
  }
  return absl::OkStatus();
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
    const v1::HandlerInstall& handler = config.handlers(i);
    const FieldPath p = root.At("handlers", i);
    if (handler.name().empty()) {
      return r.Error(p.F("name"),
                     "missing; give the handler a unique name, e.g. name: "
                     "\"count-icmp\"");
    }
    if (std::string bad =
            CheckName(handler.name(), kMaxHandlerNameLength, true);
        !bad.empty()) {
      return r.Error(p.F("name"), bad);
    }
    if (auto [it, inserted] = names.emplace(handler.name(), i); !inserted) {
      return r.Error(
          p.F("name"),
          absl::StrCat(Quote(handler.name()), " is already the name of ",
                       WhereElse(r, root.At("handlers", it->second)),
                       "; handler names must be unique"));
    }
    if (handler.kind().empty()) {
      return r.Error(p.F("kind"),
                     absl::StrCat("missing; set the handler kind, one of: ",
                                  KnownKinds()));
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
    if (absl::Status s = CheckParams(handler, *kind, i, p, r); !s.ok()) {
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
  }
  return absl::OkStatus();
}

absl::Status CheckEalArgs(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  int no_huge = -1;
  int in_memory = -1;
  for (int i = 0; i < config.eal_args_size(); ++i) {
    if (config.eal_args(i) == "--no-huge") no_huge = i;
    if (config.eal_args(i) == "--in-memory") in_memory = i;
  }
  if (no_huge >= 0 && in_memory >= 0) {
    // --no-huge implies legacy memory, which EAL refuses with --in-memory.
    return r.Error(root.At("eal_args", std::max(no_huge, in_memory)),
                   "--no-huge and --in-memory cannot be combined (EAL: "
                   "--legacy-mem is not compatible with --in-memory); keep "
                   "--no-huge and replace --in-memory with --file-prefix "
                   "<a name unique on this host>");
  }
  for (int i = 0; i < config.eal_args_size(); ++i) {
    const std::string& arg = config.eal_args(i);
    const FieldPath p = root.At("eal_args", i);
    if (arg.empty()) {
      return r.Error(p, "empty argument; remove it");
    }
    absl::string_view option = absl::string_view(arg).substr(0, arg.find('='));
    bool lcore_option = option == "--lcores" || option == "--main-lcore" ||
                        option == "--master-lcore" ||
                        (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
                         (arg[1] == 'l' || arg[1] == 'c'));
    if (lcore_option) {
      return r.Error(p, absl::StrCat(Quote(arg),
                                     " conflicts with the lcore layout "
                                     "spinnicd derives from workers and "
                                     "main_lcore; remove it and set those "
                                     "fields instead"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRuntime(const v1::Config& config, const Reporter& r) {
  if (config.runtime().burst() > kMaxBurst) {
    return r.Error(
        FieldPath().F("runtime").F("burst"),
        absl::StrCat(config.runtime().burst(), " is over ", kMaxBurst,
                     "; use 1..", kMaxBurst, ", or 0 for ", kDefaultBurst));
  }
  return absl::OkStatus();
}

// Adds what protobuf's message leaves out: the names that would be right.
std::string SyntaxHint(const std::string& message) {
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  if (absl::StrContains(message, "has no field named")) {
    // Message type "spinnic.v1.Port" has no field named "nme".
    std::vector<std::string> parts = absl::StrSplit(message, '"');
    if (parts.size() >= 2) {
      if (const Descriptor* type = pool->FindMessageTypeByName(parts[1])) {
        std::vector<std::string> fields;
        for (int i = 0; i < type->field_count(); ++i) {
          fields.push_back(type->field(i)->name());
        }
        return absl::StrCat(" The fields of ", type->name(),
                            " are: ", absl::StrJoin(fields, ", "),
                            " (docs/config.md).");
      }
    }
  }
  if (absl::StrContains(message, "Unknown enumeration value")) {
    // Unknown enumeration value of "X" for field "role".
    std::vector<std::string> parts = absl::StrSplit(message, '"');
    const FileDescriptor* file = v1::Config::descriptor()->file();
    if (parts.size() >= 4) {
      for (int m = 0; m < file->message_type_count(); ++m) {
        const FieldDescriptor* field =
            file->message_type(m)->FindFieldByName(parts[3]);
        if (field == nullptr || field->enum_type() == nullptr) continue;
        const EnumDescriptor* type = field->enum_type();
        std::vector<std::string> values;
        for (int i = 0; i < type->value_count(); ++i) {
          if (type->value(i)->number() != 0) {
            values.push_back(type->value(i)->name());
          }
        }
        return absl::StrCat(" Write one of: ", absl::StrJoin(values, ", "),
                            ".");
      }
    }
  }
  if (absl::StrContains(message, "another member of oneof")) {
    return " Keep only one of them.";
  }
  if (absl::StrContains(message, "is specified multiple times")) {
    return " Write it once (merge the two).";
  }
  if (absl::EndsWith(message, "got: ")) {
    return "end of file (is a '}' missing?)";
  }
  return "";
}

class NullErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber,
                const std::string&) override {}
};

// For errors about a name protobuf has already read (unknown field, enum
// value, a field given twice), its position is the token after the name,
// which may be on the next line. The start of the token before (line,
// column) is where the operator has to look.
void MoveToPreviousToken(absl::string_view text, int* line, int* column) {
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  NullErrorCollector ignore;
  google::protobuf::io::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(
      google::protobuf::io::Tokenizer::SH_COMMENT_STYLE);
  int prev_line = -1;
  int prev_column = -1;
  while (tokenizer.Next()) {
    const google::protobuf::io::Tokenizer::Token& token = tokenizer.current();
    if (token.line > *line ||
        (token.line == *line && token.column >= *column)) {
      break;
    }
    prev_line = token.line;
    prev_column = token.column;
  }
  if (prev_line >= 0) {
    *line = prev_line;
    *column = prev_column;
  }
}

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  // Protobuf warns about nothing a spinnic config can contain; a warning is
  // not a failure either way.
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  bool has_error() const { return has_error_; }
  std::string Format(absl::string_view source, absl::string_view text) const {
    int line = line_;
    int column = column_;
    if (line >= 0 &&
        (absl::StrContains(message_, "has no field named") ||
         absl::StrContains(message_, "Unknown enumeration value") ||
         absl::StrContains(message_, "another member of oneof") ||
         absl::StrContains(message_, "is specified multiple times"))) {
      MoveToPreviousToken(text, &line, &column);
    }
    std::string where =
        line >= 0 ? absl::StrCat(source, ":", line + 1, ":", column + 1)
                  : std::string(source);
    return OneLine(absl::StrCat(where, ": ", message_, SyntaxHint(message_)));
  }

 private:
  bool has_error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

// Records handlers[i].params keys in text order (the parse tree's order),
// before any typed access turns the entries into an unordered map, and
// rejects a key given twice (the map would silently keep one).
absl::Status RecordParamKeys(const v1::Config& config,
                             ConfigLocations* locations) {
  const FieldDescriptor* params_field =
      v1::HandlerInstall::descriptor()->FindFieldByName("params");
  const Reporter r(locations);
  for (int i = 0; i < config.handlers_size(); ++i) {
    const Message& handler = config.handlers(i);
    const Reflection* reflection = handler.GetReflection();
    std::vector<std::string> keys;
    absl::flat_hash_map<std::string, int> seen;
    for (int j = 0; j < reflection->FieldSize(handler, params_field); ++j) {
      const Message& entry =
          reflection->GetRepeatedMessage(handler, params_field, j);
      const FieldDescriptor* key_field =
          entry.GetDescriptor()->FindFieldByName("key");
      std::string key = entry.GetReflection()->GetString(entry, key_field);
      const FieldPath at = FieldPath().At("handlers", i).Key("params", key, j);
      if (auto [it, inserted] = seen.emplace(key, j); !inserted) {
        const FieldPath first =
            FieldPath().At("handlers", i).Key("params", key, it->second);
        return r.Error(at, absl::StrCat("given twice (first on line ",
                                        r.Line(first), "); keep one"));
      }
      keys.push_back(std::move(key));
    }
    if (!keys.empty()) locations->SetParamKeys(i, std::move(keys));
  }
  return absl::OkStatus();
}

}  // namespace

ConfigLocations::ConfigLocations(absl::string_view source_name)
    : source_name_(source_name),
      tree_(std::make_unique<TextFormat::ParseInfoTree>()) {}
ConfigLocations::ConfigLocations(ConfigLocations&&) noexcept = default;
ConfigLocations& ConfigLocations::operator=(ConfigLocations&&) noexcept =
    default;
ConfigLocations::~ConfigLocations() = default;

void ConfigLocations::MarkOverridden(std::string path) {
  overridden_.push_back(std::move(path));
}

bool ConfigLocations::IsOverridden(absl::string_view path) const {
  for (const std::string& marked : overridden_) {
    if (absl::StartsWith(path, marked) &&
        (path.size() == marked.size() || path[marked.size()] == '.' ||
         path[marked.size()] == '[')) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& ConfigLocations::ParamKeys(int handler) const {
  static const auto* const kNone = new std::vector<std::string>();
  auto it = param_keys_.find(handler);
  return it == param_keys_.end() ? *kNone : it->second;
}

void ConfigLocations::SetParamKeys(int handler, std::vector<std::string> keys) {
  param_keys_[handler] = std::move(keys);
}

absl::StatusOr<ParsedConfig> ParseConfigText(absl::string_view text,
                                             absl::string_view source_name) {
  ParsedConfig parsed{v1::Config(), ConfigLocations(source_name)};
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(OneLine(source_name), ": the config is ", text.size(),
                     " bytes; configs over ", kMaxConfigBytes,
                     " bytes are not supported (is this the right file?)"));
  }
  TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(parsed.locations.tree());
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  if (!parser.Parse(&input, &parsed.config)) {
    if (!errors.has_error()) {
      return absl::InvalidArgumentError(absl::StrCat(
          OneLine(source_name),
          ": not a text-format spinnic.v1.Config (see docs/config.md)"));
    }
    return absl::InvalidArgumentError(
        errors.Format(OneLine(source_name), text));
  }
  if (absl::Status s = RecordParamKeys(parsed.config, &parsed.locations);
      !s.ok()) {
    return s;
  }
  return parsed;
}

absl::StatusOr<ParsedConfig> ParseConfigFile(const std::string& path) {
  auto fail = [&](int error) {
    std::string message = absl::StrCat(
        OneLine(path), ": cannot read the config file: ", std::strerror(error),
        "; pass --config a readable text-format spinnic.v1.Config "
        "file (or leave --config out for the built-in default)");
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) {
      return absl::PermissionDeniedError(message);
    }
    return absl::InvalidArgumentError(message);
  };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return fail(errno);
  std::string text;
  char buffer[64 * 1024];
  while (true) {
    size_t n = std::fread(buffer, 1, sizeof(buffer), file);
    text.append(buffer, n);
    if (text.size() > kMaxConfigBytes) break;
    if (n < sizeof(buffer)) {
      if (std::ferror(file)) {
        int error = errno;
        std::fclose(file);
        return fail(error);
      }
      break;
    }
  }
  std::fclose(file);
  return ParseConfigText(text, path);
}

void ApplyOverrides(const ConfigOverrides& overrides, v1::Config* config,
                    ConfigLocations* locations) {
  auto mark = [&](std::string path) {
    if (locations != nullptr) locations->MarkOverridden(std::move(path));
  };
  if (overrides.duration_s.has_value()) {
    config->mutable_runtime()->set_duration_s(*overrides.duration_s);
    mark("runtime.duration_s");
  }
  if (overrides.stats_interval_ms.has_value()) {
    config->mutable_runtime()->set_stats_interval_ms(
        *overrides.stats_interval_ms);
    mark("runtime.stats_interval_ms");
  }
  if (overrides.workers.has_value()) {
    config->clear_workers();
    for (uint32_t core : *overrides.workers) config->add_workers(core);
    mark("workers");
  }
  if (overrides.main_lcore.has_value()) {
    config->set_main_lcore(*overrides.main_lcore);
    mark("main_lcore");
  }
  for (const std::string& arg : overrides.extra_eal_args) {
    mark(absl::StrCat("eal_args[", config->eal_args_size(), "]"));
    config->add_eal_args(arg);
  }
}

absl::Status ValidateConfig(const v1::Config& config,
                            const ConfigLocations* locations) {
  const Reporter r(locations);
  for (auto check :
       {&CheckPorts, &CheckPortPairs, &CheckWorkers, &CheckAddresses,
        &CheckDiad, &CheckRoce, &CheckHandlers, &CheckEalArgs, &CheckRuntime}) {
    if (absl::Status s = check(config, r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Config> LoadConfig(absl::string_view path,
                                      const ConfigOverrides& overrides) {
  absl::StatusOr<ParsedConfig> parsed =
      path.empty()
          ? ParseConfigText(DefaultConfigText(), kDefaultConfigSourceName)
          : ParseConfigFile(std::string(path));
  if (!parsed.ok()) return parsed.status();
  ApplyOverrides(overrides, &parsed->config, &parsed->locations);
  if (absl::Status s = ValidateConfig(parsed->config, &parsed->locations);
      !s.ok()) {
    return s;
  }
  return std::move(parsed->config);
}

absl::StatusOr<DataplaneConfig> ToDataplaneConfig(const v1::Config& config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  DataplaneConfig out;
  absl::flat_hash_map<std::string, uint16_t> index;
  for (const v1::Port& port : config.ports()) {
    index[port.name()] = static_cast<uint16_t>(out.ports.size());
    PortConfig& p = out.ports.emplace_back();
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
  }
  for (const v1::PortPair& pair : config.port_pairs()) {
    out.port_pairs.emplace_back(index.at(pair.a()), index.at(pair.b()));
  }
  out.worker_cores.assign(config.workers().begin(), config.workers().end());
  for (const v1::HandlerInstall& handler : config.handlers()) {
    HandlerConfig& h = out.handlers.emplace_back();
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
    if (handler.diad().has_stream_id()) {
      h.binding = {diad::kBindStream, handler.diad().stream_id()};
    } else if (handler.diad().has_write_region()) {
      h.binding = {kBindRegionWrites, handler.diad().write_region()};
    } else if (handler.roce().has_qpn()) {
      h.binding = {roce::kBindQp, handler.roce().qpn()};
    } else if (handler.roce().has_naaice_function()) {
      h.binding = {roce::kBindNaaiceFunction,
                   handler.roce().naaice_function()};
    }

    const v1::MatchRule& match = handler.match();
    MatchRule& m = h.match;
    if (match.in_ports_size() > 0) {
      m.in_port_mask = 0;
      for (const std::string& name : match.in_ports()) {
        m.in_port_mask |= uint64_t{1} << index.at(name);
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
  }
  if (!config.addresses().diad_node().empty()) {
    diad::DiadConfig& d = out.diad;
    const v1::Diad& c = config.diad();
    d.enabled = true;
    ParseNode(config.addresses().diad_node(), &d.node);
    if (!config.addresses().mac().empty()) {
      ParseMac(config.addresses().mac(), &d.mac);
    }  // else: the DiAD port's own MAC, filled in by the dataplane
    d.port = kNoDiadPort;
    for (size_t i = 0; i < out.ports.size(); ++i) {
      if (c.port().empty() ? out.ports[i].role == PortRole::kWire
                           : out.ports[i].name == c.port()) {
        d.port = static_cast<uint16_t>(i);
        break;
      }
    }
    if (d.port == kNoDiadPort) {
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
    ch.window_packets = static_cast<uint32_t>(
        or_default(c.window_packets(), ch.window_packets));
    ch.window_bytes = or_default(c.window_bytes(), ch.window_bytes);
    ch.max_transactions = static_cast<uint32_t>(
        or_default(c.max_transactions(), ch.max_transactions));
    ch.ack_every =
        static_cast<uint32_t>(or_default(c.ack_every(), ch.ack_every));
    ch.ack_delay_ns =
        or_default(uint64_t{c.ack_delay_us()} * 1000, ch.ack_delay_ns);
    ch.rto_ns = or_default(uint64_t{c.rto_us()} * 1000, ch.rto_ns);
    ch.rto_max_ns = or_default(uint64_t{c.rto_max_us()} * 1000, ch.rto_max_ns);
    ch.max_retries =
        static_cast<uint32_t>(or_default(c.max_retries(), ch.max_retries));
    ch.nack_interval_ns =
        or_default(uint64_t{c.nack_interval_us()} * 1000, ch.nack_interval_ns);
    for (const v1::DiadPeer& peer : c.peers()) {
      diad::PeerConfig& p = d.peers.emplace_back();
      p.name = peer.name();
      ParseNode(peer.node(), &p.node);
      ParseMac(peer.mac(), &p.mac);
    }
  }
  if (config.has_roce()) {
    roce::RoceConfig& rc = out.roce;
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
    uint16_t port = kNoDiadPort;
    for (size_t i = 0; i < out.ports.size(); ++i) {
      if (c.port().empty() ? out.ports[i].role == PortRole::kWire
                           : out.ports[i].name == c.port()) {
        port = static_cast<uint16_t>(i);
        break;
      }
    }
    if (port == kNoDiadPort) {
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
    for (uint32_t p : c.listen_ports()) {
      rc.listen_ports.push_back(static_cast<uint16_t>(p));
    }
    rc.ack_every = or_default(c.ack_every(), rc.ack_every);
    rc.local_ack_timeout = static_cast<uint8_t>(
        or_default(c.local_ack_timeout(), rc.local_ack_timeout));
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
    rc.perftest_port = static_cast<uint16_t>(c.perftest_port());
    if (c.connection_region_bytes() != 0) {
      rc.connection_region_bytes = c.connection_region_bytes();
    }
    // The CM listens on every service's port.
    for (uint16_t port : {rc.naaice_port, rc.rping_port, rc.perftest_port}) {
      if (port != 0 && std::find(rc.listen_ports.begin(), rc.listen_ports.end(),
                                 port) == rc.listen_ports.end()) {
        rc.listen_ports.push_back(port);
      }
    }
  }
  out.mbufs = config.runtime().mbufs();
  if (config.runtime().max_regions() != 0) {
    out.max_regions = config.runtime().max_regions();
  }
  if (config.runtime().region_bytes_limit() != 0) {
    out.region_bytes_limit = config.runtime().region_bytes_limit();
  }
  out.burst = static_cast<uint16_t>(
      config.runtime().burst() != 0 ? config.runtime().burst() : kDefaultBurst);
  return out;
}

std::vector<std::string> BuildEalArgs(const v1::Config& config) {
  std::vector<std::string> args = {"spinnicd"};
  std::string lcores = absl::StrCat("0@", config.main_lcore());
  for (int i = 0; i < config.workers_size(); ++i) {
    absl::StrAppend(&lcores, ",", i + 1, "@", config.workers(i));
  }
  args.push_back("--lcores");
  args.push_back(std::move(lcores));
  args.push_back("--main-lcore");
  args.push_back("0");
  args.insert(args.end(), config.eal_args().begin(), config.eal_args().end());
  return args;
}

}  // namespace spinnic
