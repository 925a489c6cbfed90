#include "dataplane/host_checks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace spinnic {
namespace {

// The drivers through which DPDK's PCI PMDs reach a device.
constexpr absl::string_view kDpdkDrivers[] = {"vfio-pci", "uio_pci_generic",
                                              "igb_uio"};

uint64_t ReadCount(const std::filesystem::path& path) {
  std::ifstream file(path);
  uint64_t value = 0;
  std::string text;
  if (file >> text && absl::SimpleAtoi(text, &value)) return value;
  return 0;
}

bool HugetlbfsMounted(const std::string& mounts) {
  std::ifstream file(mounts);
  std::string line;
  while (std::getline(file, line)) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 3 && fields[2] == "hugetlbfs") return true;
  }
  return false;
}

}  // namespace

absl::Status CheckHugepages(const std::vector<std::string>& eal_args,
                            const std::string& sysfs_hugepages,
                            const std::string& mounts) {
  if (std::find(eal_args.begin(), eal_args.end(), "--no-huge") !=
      eal_args.end()) {
    return absl::OkStatus();
  }
  uint64_t reserved = 0;
  uint64_t free = 0;
  std::error_code error;
  for (const auto& size :
       std::filesystem::directory_iterator(sysfs_hugepages, error)) {
    reserved += ReadCount(size.path() / "nr_hugepages");
    free += ReadCount(size.path() / "free_hugepages");
  }
  constexpr absl::string_view kNoHuge =
      "or add \"--no-huge\", \"-m\", \"256\" to eal_args (no hugepages: "
      "slower, no multi-process)";
  if (reserved == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no hugepages reserved (", sysfs_hugepages,
        "/*/nr_hugepages are 0) and eal_args has no \"--no-huge\": reserve "
        "2 MB pages with `echo 512 > "
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages` (as root; "
        "vm.nr_hugepages=512 in /etc/sysctl.d to keep it), ",
        kNoHuge));
  }
  if (free == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "all ", reserved,
        " reserved hugepages are in use (another DPDK process? "
        "grep Huge /proc/meminfo) and eal_args has no \"--no-huge\": stop "
        "that process or reserve more in "
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages, ",
        kNoHuge));
  }
  if (!HugetlbfsMounted(mounts)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hugepages are reserved but no hugetlbfs is mounted: `mount -t "
        "hugetlbfs nodev /dev/hugepages` (as root), ",
        kNoHuge));
  }
  return absl::OkStatus();
}

std::string DiagnosePciDevice(absl::string_view address,
                              const std::string& sysfs_pci_devices) {
  std::string bdf(address.substr(0, address.find(',')));
  // sysfs names carry the PCI domain; the EAL accepts it omitted.
  if (std::count(bdf.begin(), bdf.end(), ':') == 1) bdf = "0000:" + bdf;
  const std::filesystem::path device =
      std::filesystem::path(sysfs_pci_devices) / bdf;
  std::error_code error;
  if (!std::filesystem::exists(device, error)) {
    return absl::StrCat("there is no PCI device ", bdf,
                        " on this machine: correct the port's pci address "
                        "(`dpdk-devbind.py --status` or `lspci -D` lists "
                        "them)");
  }
  const std::filesystem::path driver_link =
      std::filesystem::read_symlink(device / "driver", error);
  const std::string bind = absl::StrCat(
      "`modprobe vfio-pci && dpdk-devbind.py --bind=vfio-pci ", bdf, "`");
  if (error) {
    return absl::StrCat("PCI device ", bdf,
                        " is bound to no driver: bind it to a DPDK one with ",
                        bind);
  }
  const std::string driver = driver_link.filename().string();
  for (absl::string_view dpdk : kDpdkDrivers) {
    if (driver == dpdk) {
      return absl::StrCat(
          "PCI device ", bdf, " is bound to ", driver,
          " but the EAL could not take it: is another DPDK process using it "
          "(each needs its own device and --file-prefix), or eal_args "
          "\"--no-pci\" or an allow-list (-a) without it? For vfio-pci, "
          "its IOMMU group must be viable (dpdk-devbind.py --status)");
    }
  }
  return absl::StrCat("PCI device ", bdf, " is bound to the kernel driver ",
                      driver, ", not to a DPDK one: bind it with ", bind,
                      " (its kernel interface goes away while DPDK has it)");
}

}  // namespace spinnic
