// What the host lacks for DPDK, found before (or instead of) the EAL's own
// cryptic failure, each with the fix: hugepages for an EAL started without
// --no-huge, and a PCI port's device (absent, or bound to a kernel driver).
// Reads sysfs and /proc only; changes nothing.
#ifndef SPINNIC_DATAPLANE_HOST_CHECKS_H_
#define SPINNIC_DATAPLANE_HOST_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace spinnic {

// OK when `eal_args` has --no-huge, or some hugepage size has free pages and
// a hugetlbfs is mounted. Otherwise FAILED_PRECONDITION saying what to
// reserve or mount, or to add --no-huge. `sysfs_hugepages` and `mounts` are
// for tests.
absl::Status CheckHugepages(
    const std::vector<std::string>& eal_args,
    const std::string& sysfs_hugepages = "/sys/kernel/mm/hugepages",
    const std::string& mounts = "/proc/mounts");

// Why the EAL could not probe the PCI device `address` ("0000:00:05.0" or
// "00:05.0", devargs after a comma ignored) and what to do: no such device,
// bound to no driver, bound to a kernel driver (dpdk-devbind.py), or bound to
// a DPDK driver yet busy. `sysfs_pci_devices` is for tests.
std::string DiagnosePciDevice(
    absl::string_view address,
    const std::string& sysfs_pci_devices = "/sys/bus/pci/devices");

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_HOST_CHECKS_H_
