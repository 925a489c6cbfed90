// dataplane/host_checks.h on fake sysfs and /proc/mounts trees: each
// missing piece of the host gets its cause and fix, exactly.
#include "dataplane/host_checks.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class HostChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            absl::StrCat("spinnic-host-checks-", getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ / "hugepages");
    fs::create_directories(root_ / "pci");
    fs::create_directories(root_ / "drivers");
    Write("mounts", "proc /proc proc rw 0 0\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  void Pages(uint64_t reserved, uint64_t free) {
    Write("hugepages/hugepages-2048kB/nr_hugepages", absl::StrCat(reserved));
    Write("hugepages/hugepages-2048kB/free_hugepages", absl::StrCat(free));
  }
  absl::Status Check(const std::vector<std::string>& args) {
    return CheckHugepages(args, (root_ / "hugepages").string(),
                          (root_ / "mounts").string());
  }
  void Device(const std::string& bdf, const std::string& driver) {
    fs::create_directories(root_ / "pci" / bdf);
    if (!driver.empty()) {
      fs::create_directories(root_ / "drivers" / driver);
      fs::create_directory_symlink(root_ / "drivers" / driver,
                                   root_ / "pci" / bdf / "driver");
    }
  }
  std::string Diagnose(const std::string& address) {
    return DiagnosePciDevice(address, (root_ / "pci").string());
  }

  fs::path root_;
};

TEST_F(HostChecksTest, NoHugeNeedsNoHugepages) {
  EXPECT_TRUE(Check({"spinnicd", "--no-huge", "-m", "256"}).ok());
}

TEST_F(HostChecksTest, NoneReservedNamesTheSysfsFileAndNoHuge) {
  Pages(0, 0);
  absl::Status status = Check({"spinnicd", "-m", "256"});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            absl::StrCat(
                "no hugepages reserved (", (root_ / "hugepages").string(),
                "/*/nr_hugepages are 0) and eal_args has no \"--no-huge\": "
                "reserve 2 MB pages with `echo 512 > "
                "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages` (as "
                "root; vm.nr_hugepages=512 in /etc/sysctl.d to keep it), or "
                "add \"--no-huge\", \"-m\", \"256\" to eal_args (no "
                "hugepages: slower, no multi-process)"));
  // No hugetlb support at all reads the same.
  fs::remove_all(root_ / "hugepages");
  EXPECT_THAT(std::string(Check({"spinnicd"}).message()),
              StartsWith("no hugepages reserved"));
}

TEST_F(HostChecksTest, AllInUseAndUnmountedAreTheirOwnCauses) {
  Pages(512, 0);
  EXPECT_THAT(std::string(Check({"spinnicd"}).message()),
              StartsWith("all 512 reserved hugepages are in use (another DPDK "
                         "process?"));
  Pages(512, 100);
  EXPECT_THAT(std::string(Check({"spinnicd"}).message()),
              StartsWith("hugepages are reserved but no hugetlbfs is mounted: "
                         "`mount -t hugetlbfs nodev /dev/hugepages`"));
  Write("mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n");
  EXPECT_TRUE(Check({"spinnicd"}).ok());
}

TEST_F(HostChecksTest, PciDeviceAbsentUnboundKernelOrBusy) {
  EXPECT_EQ(Diagnose("0000:00:05.0"),
            "there is no PCI device 0000:00:05.0 on this machine: correct "
            "the port's pci address (`dpdk-devbind.py --status` or `lspci "
            "-D` lists them)");
  Device("0000:00:05.0", "");
  // The EAL's short form and devargs after a comma.
  EXPECT_EQ(Diagnose("00:05.0,rx_queues=2"),
            "PCI device 0000:00:05.0 is bound to no driver: bind it to a DPDK "
            "one with `modprobe vfio-pci && dpdk-devbind.py --bind=vfio-pci "
            "0000:00:05.0`");
  Device("0000:00:06.0", "virtio-pci");
  EXPECT_EQ(Diagnose("0000:00:06.0"),
            "PCI device 0000:00:06.0 is bound to the kernel driver "
            "virtio-pci, not to a DPDK one: bind it with `modprobe vfio-pci "
            "&& dpdk-devbind.py --bind=vfio-pci 0000:00:06.0` (its kernel "
            "interface goes away while DPDK has it)");
  Device("0000:00:07.0", "vfio-pci");
  EXPECT_THAT(Diagnose("0000:00:07.0"),
              StartsWith("PCI device 0000:00:07.0 is bound to vfio-pci but "
                         "the EAL could not take it: is another DPDK process "
                         "using it"));
}

}  // namespace
}  // namespace spinnic
