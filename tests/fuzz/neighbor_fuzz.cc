// Fuzz target for neighbour discovery (dataplane/neighbor.h). The first
// input byte sizes the reply buffer (0: kMaxNeighborReplyBytes, n: n - 1
// bytes), the rest is one received frame, handled for the local addresses
// fd00::1 / 10.0.0.1 at 02:00:00:00:00:01. Besides "never reads outside
// the frame nor writes outside the reply buffer" (ASan, on exactly sized
// buffers), it checks:
//   - a reply is never longer than the buffer, nothing is written without
//     kAnswer, and every verdict/reason is a named one;
//   - every answer we build is accepted by our own parser on the other
//     side: an NA or ARP reply that teaches (the asked address, our MAC);
//   - the NS/ARP request builders, fed targets and sources from the input,
//     write at most the buffer, and what they build is answered by a node
//     that owns the target, with an answer the builder's side learns.
// Seeds: tests/fuzz/corpus/neighbor/ (tests/fuzz/gen_corpus.py).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/neighbor.h"

namespace spinnic {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

constexpr uint8_t kFill = 0xa5;
const MacAddress kOurMac = {0x02, 0, 0, 0, 0, 1};
const MacAddress kPeerMac = {0x02, 0, 0, 0, 0, 2};
const Ipv6Address kOurIp6[] = {
    {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
const Ipv4Address kOurIp4[] = {{10, 0, 0, 1}};

// Handles `frame` with a reply buffer of exactly `room` bytes.
NeighborResult HandleChecked(const std::vector<uint8_t>& frame,
                             const LocalAddresses& local, size_t room,
                             std::vector<uint8_t>* reply) {
  reply->assign(room, kFill);
  const NeighborResult r = HandleNeighborFrame(frame, local, *reply);
  FUZZ_CHECK(r.verdict <= NeighborVerdict::kMalformed);
  FUZZ_CHECK(r.error < NeighborError::kCount);
  FUZZ_CHECK((r.verdict == NeighborVerdict::kMalformed) ==
             (r.error != NeighborError::kNone));
  FUZZ_CHECK(r.reply_length <= room);
  if (r.verdict == NeighborVerdict::kAnswer) {
    FUZZ_CHECK(r.reply_length >= 42);
    reply->resize(r.reply_length);
  } else {
    FUZZ_CHECK(r.reply_length == 0);
    for (uint8_t b : *reply) FUZZ_CHECK(b == kFill);
    reply->clear();
  }
  return r;
}

// The peer side receives our answer: it must learn our MAC for the address
// that was asked for (an NA's target, an ARP reply's sender).
void CheckAnswerIsLearned(const std::vector<uint8_t>& answer,
                          const MacAddress& answer_mac) {
  LocalAddresses nobody;
  nobody.mac = kPeerMac;
  std::vector<uint8_t> reply;
  const NeighborResult r =
      HandleChecked(answer, nobody, kMaxNeighborReplyBytes, &reply);
  FUZZ_CHECK(r.verdict == NeighborVerdict::kLearned);
  FUZZ_CHECK(r.mac == answer_mac);
}

}  // namespace
}  // namespace spinnic

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spinnic;
  if (size == 0) return 0;
  const size_t room = data[0] == 0 ? kMaxNeighborReplyBytes : data[0] - 1u;
  const std::vector<uint8_t> frame(data + 1, data + size);
  LocalAddresses local;
  local.mac = kOurMac;
  local.ipv6 = kOurIp6;
  local.ipv4 = kOurIp4;

  std::vector<uint8_t> reply;
  const NeighborResult r = HandleChecked(frame, local, room, &reply);
  if (r.verdict == NeighborVerdict::kAnswer) {
    CheckAnswerIsLearned(reply, kOurMac);
  }

  // Builders: a target and a (unicast) source from the input.
  if (frame.size() >= 16 + 6) {
    Ipv6Address target;
    std::memcpy(target.data(), frame.data(), 16);
    MacAddress mac;
    std::memcpy(mac.data(), frame.data() + 16, 6);
    mac[0] &= 0xfe;  // unicast
    const size_t out_room = std::min<size_t>(room, 128);
    std::vector<uint8_t> out(out_room, kFill);
    const Ipv6Address source = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                                0,    0, 0, 0, 0, 0, 0, 7};
    const uint32_t n = BuildNeighborSolicitation(mac, source, target, out);
    FUZZ_CHECK(n <= out_room);
    FUZZ_CHECK(n == 0 || n == kNeighborSolicitationBytes);
    FUZZ_CHECK((n == 0) == (out_room < kNeighborSolicitationBytes));
    if (n != 0 && target != source) {
      out.resize(n);
      LocalAddresses owner;
      owner.mac = kOurMac;
      const Ipv6Address owned[] = {target};
      owner.ipv6 = owned;
      const NeighborResult a =
          HandleChecked(out, owner, kMaxNeighborReplyBytes, &reply);
      FUZZ_CHECK(a.verdict == NeighborVerdict::kAnswer);
      // A multicast target is ours by configuration here: the answer
      // carries it, and the learning side refuses it.
      if (target[0] != 0xff) CheckAnswerIsLearned(reply, kOurMac);
    }

    Ipv4Address target4;
    std::memcpy(target4.data(), frame.data(), 4);
    const Ipv4Address source4 = {10, 9, 9, 9};
    std::vector<uint8_t> out4(out_room, kFill);
    const uint32_t n4 = BuildArpRequest(mac, source4, target4, out4);
    FUZZ_CHECK(n4 <= out_room);
    FUZZ_CHECK((n4 == 0) == (out_room < kArpRequestBytes));
    if (n4 != 0 && target4 != source4) {
      out4.resize(n4);
      LocalAddresses owner;
      owner.mac = kOurMac;
      const Ipv4Address owned[] = {target4};
      owner.ipv4 = owned;
      const NeighborResult a =
          HandleChecked(out4, owner, kMaxNeighborReplyBytes, &reply);
      FUZZ_CHECK(a.verdict == NeighborVerdict::kAnswer);
      CheckAnswerIsLearned(reply, kOurMac);
    }
  }
  return 0;
}
