#include "dataplane/roce/service_ports.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace spinnic::roce {

const char* ServiceSlotName(ServiceSlot slot) {
  switch (slot) {
    case ServiceSlot::kVerbs:
      return "verbs";
    case ServiceSlot::kNaaice:
      return "naaice";
    case ServiceSlot::kRping:
      return "rping";
    case ServiceSlot::kPerftest:
      return "perftest";
    case ServiceSlot::kPerftestWriteLat:
      return "perftest_write_lat";
    case ServiceSlot::kEcho:
      return "echo";
    case ServiceSlot::kCount:
      break;
  }
  return "unknown";
}

ServicePorts ServicePorts::Of(const RoceConfig& config) {
  ServicePorts s;
  s.ports_[static_cast<size_t>(ServiceSlot::kNaaice)] = config.naaice_port;
  s.ports_[static_cast<size_t>(ServiceSlot::kRping)] = config.rping_port;
  s.ports_[static_cast<size_t>(ServiceSlot::kPerftest)] = config.perftest_port;
  s.ports_[static_cast<size_t>(ServiceSlot::kPerftestWriteLat)] =
      config.perftest_write_lat.port;
  s.ports_[static_cast<size_t>(ServiceSlot::kEcho)] = config.echo_port;
  // listen_ports holds the services' ports too (the config loader adds
  // them); the rest are plain. The config allows at most kCmMaxListeners.
  for (uint16_t port : config.listen_ports) {
    if (port == 0 || s.Listens(port) || s.plain_count_ == s.plain_.size()) {
      continue;
    }
    s.plain_[s.plain_count_++] = port;
  }
  return s;
}

bool ServicePorts::Lookup(uint16_t port, ServiceSlot* slot) const {
  if (port == 0) return false;
  for (size_t i = 1; i < kServiceSlots; ++i) {
    if (ports_[i] == port) {
      *slot = static_cast<ServiceSlot>(i);
      return true;
    }
  }
  for (size_t i = 0; i < plain_count_; ++i) {
    if (plain_[i] == port) {
      *slot = ServiceSlot::kVerbs;
      return true;
    }
  }
  return false;
}

size_t ServicePorts::listen_count() const {
  // No two services share a port: Set refuses it, and so does the config's
  // check.
  return plain_count_ + std::count_if(ports_.begin() + 1, ports_.end(),
                                      [](uint16_t p) { return p != 0; });
}

absl::Status ServicePorts::Set(absl::string_view name, uint32_t port,
                               bool enable) {
  ServiceSlot slot = ServiceSlot::kCount;
  for (size_t i = 0; i < kServiceSlots; ++i) {
    if (name == ServiceSlotName(static_cast<ServiceSlot>(i))) {
      slot = static_cast<ServiceSlot>(i);
    }
  }
  if (slot == ServiceSlot::kCount) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no service '", name,
        "'; use verbs, naaice, rping, perftest, perftest_write_lat or echo"));
  }
  const bool verbs = slot == ServiceSlot::kVerbs;
  if ((enable || verbs) && (port == 0 || port > 0xffff)) {
    return absl::InvalidArgumentError(
        absl::StrCat("port ", port, " is not an rdma_cm port; use 1..65535"));
  }
  const uint16_t p = static_cast<uint16_t>(port);
  if (!enable) {
    if (!verbs) {
      ports_[static_cast<size_t>(slot)] = 0;
      return absl::OkStatus();
    }
    uint16_t* end = plain_.data() + plain_count_;
    uint16_t* it = std::find(plain_.data(), end, p);
    if (it == end) {
      return absl::NotFoundError(absl::StrCat(
          "port ", port, " is not a plain (verbs) port; GetInfo lists them"));
    }
    *it = *(end - 1);
    --plain_count_;
    return absl::OkStatus();
  }
  ServiceSlot current;
  if (Lookup(p, &current)) {
    if (current == slot) return absl::OkStatus();  // already so
    return absl::FailedPreconditionError(
        absl::StrCat("port ", port, " runs ", ServiceSlotName(current),
                     "; turn that off first (or pick another port)"));
  }
  // A single-port service that moves frees its old port: no new listener.
  if (listen_count() + (verbs || this->port(slot) == 0 ? 1 : 0) >
      kCmMaxListeners) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the connection manager listens on at most ",
                     kCmMaxListeners, " ports; turn one off first"));
  }
  if (verbs) {
    plain_[plain_count_++] = p;
  } else {
    ports_[static_cast<size_t>(slot)] = p;
  }
  return absl::OkStatus();
}

}  // namespace spinnic::roce
