// rte_bpf_convert is still marked experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1

#include "dataplane/pcap_filter.h"

#include <pcap/pcap.h>
#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <mutex>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace spinnic {
namespace {

constexpr int kSnapLength = 65535;

// libpcap's parser kept global state before 1.8 and some builds still
// serialise pcap_compile themselves; one lock for a control-path call is
// cheap insurance.
std::mutex& CompileMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string Quote(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

constexpr char kHint[] =
    "write a tcpdump filter expression for Ethernet frames (man "
    "pcap-filter), e.g. \"ip6 and udp dst port 4791\"";

// Compiles `expression` to classic BPF into `program` (freed by the caller
// with pcap_freecode on success).
absl::Status CompileClassic(absl::string_view expression,
                            bpf_program* program) {
  if (expression.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pcap_filter is empty; ", kHint));
  }
  if (expression.size() > PcapFilter::kMaxExpressionLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pcap_filter has ", expression.size(), " characters, more than the ",
        PcapFilter::kMaxExpressionLength,
        " allowed; split the rule or use the match fields"));
  }
  if (expression.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pcap_filter ", Quote(expression), " contains a NUL byte; ", kHint));
  }
  const std::string text(expression);
  std::lock_guard<std::mutex> lock(CompileMutex());
  pcap_t* pcap = pcap_open_dead(DLT_EN10MB, kSnapLength);
  if (pcap == nullptr) {
    return absl::ResourceExhaustedError(
        "pcap_filter: libpcap could not open a dead capture handle");
  }
  if (pcap_compile(pcap, program, text.c_str(), /*optimize=*/1,
                   PCAP_NETMASK_UNKNOWN) != 0) {
    const std::string why = pcap_geterr(pcap);
    pcap_close(pcap);
    return absl::InvalidArgumentError(
        absl::StrCat("pcap_filter ", Quote(expression),
                     " does not compile: ", why, "; ", kHint));
  }
  pcap_close(pcap);
  return absl::OkStatus();
}

}  // namespace

absl::Status PcapFilter::Check(absl::string_view expression) {
  bpf_program program{};
  if (absl::Status s = CompileClassic(expression, &program); !s.ok()) {
    return s;
  }
  pcap_freecode(&program);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PcapFilter>> PcapFilter::Compile(
    absl::string_view expression) {
  bpf_program program{};
  if (absl::Status s = CompileClassic(expression, &program); !s.ok()) {
    return s;
  }
  // The converted program takes the rte_mbuf* as its argument
  // (RTE_BPF_ARG_PTR_MBUF) and reads the frame with LD_ABS/LD_IND, which
  // go through rte_pktmbuf_read: multi-segment mbufs work.
  rte_bpf_prm* prm = rte_bpf_convert(&program);
  pcap_freecode(&program);
  if (prm == nullptr) {
    return absl::InternalError(
        absl::StrCat("pcap_filter ", Quote(expression),
                     ": librte_bpf could not convert libpcap's program (",
                     rte_strerror(rte_errno), "); is the EAL initialised?"));
  }
  rte_bpf* bpf = rte_bpf_load(prm);
  const int load_errno = rte_errno;
  rte_free(prm);
  if (bpf == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("pcap_filter ", Quote(expression),
                     ": librte_bpf refused the converted program (",
                     rte_strerror(load_errno), "); simplify the expression"));
  }
  std::unique_ptr<PcapFilter> filter(new PcapFilter());
  filter->expression_ = std::string(expression);
  filter->bpf_ = bpf;
  rte_bpf_jit jit{};
  if (rte_bpf_get_jit(bpf, &jit) == 0) filter->jit_ = jit.func;
  return filter;
}

PcapFilter::~PcapFilter() { rte_bpf_destroy(bpf_); }

bool PcapFilter::Passes(const rte_mbuf* packet) const {
  if (packet == nullptr) return false;
  // The programs only read the mbuf; librte_bpf's signature is not const.
  void* ctx = const_cast<rte_mbuf*>(packet);
  // A classic filter returns the number of bytes to capture: 0 rejects.
  return (jit_ != nullptr ? jit_(ctx) : rte_bpf_exec(bpf_, ctx)) != 0;
}

}  // namespace spinnic
