// A scripted DiAD peer for tests: it speaks to a real Dataplane through the
// rings of a RingDataplane's wire port, building and parsing frames with the
// transport's own wire code but keeping its sequence numbers by hand, so a
// test states exactly which packets go in ("segment 2 before segment 1")
// and checks what comes out.
#ifndef SPINNIC_TESTS_COMMON_DIAD_TEST_PEER_H_
#define SPINNIC_TESTS_COMMON_DIAD_TEST_PEER_H_

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/diad/wire.h"
#include "tests/common/wire_ring.h"

namespace spinnic::testing_diad {

using Bytes = std::vector<uint8_t>;

struct Received {
  diad::Header header;
  Bytes payload;
};

class TestPeer {
 public:
  // Frames go into `to_dut` (the wire port's RX ring) and come from
  // `from_dut` (its TX ring); mbufs from `pool`.
  TestPeer(rte_mempool* pool, rte_ring* to_dut, rte_ring* from_dut,
           const diad::Endpoint& self, const diad::Endpoint& dut,
           uint16_t udp_port, uint32_t epoch)
      : pool_(pool),
        to_dut_(to_dut),
        from_dut_(from_dut),
        self_(self),
        dut_(dut),
        udp_port_(udp_port),
        epoch_(epoch) {}

  // Raw frame into the appliance's wire port.
  bool SendFrame(std::span<const uint8_t> frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) return false;
    char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    if (data == nullptr) {
      rte_pktmbuf_free(m);
      return false;
    }
    std::memcpy(data, frame.data(), frame.size());
    if (testing_wire::PutOnWire(to_dut_, m) != 0) {
      rte_pktmbuf_free(m);
      return false;
    }
    return true;
  }

  // A DiAD frame with our epochs (unless `keep_epochs`: h's, zeros too)
  // and, unless `keep_ack`, our cumulative ack; sequenced types take the
  // next sequence number unless `keep_seq`.
  Bytes Build(diad::Header h, std::span<const uint8_t> payload,
              bool keep_seq = false, bool keep_ack = false,
              bool keep_epochs = false) {
    if (!keep_epochs) {
      h.src_epoch = h.src_epoch != 0 ? h.src_epoch : epoch_;
      h.dst_epoch = h.dst_epoch != 0 ? h.dst_epoch : dut_epoch_;
    }
    if (!keep_ack) h.ack = expected_;
    if (diad::IsSequenced(h.type) && !keep_seq) h.seq = next_seq_++;
    Bytes frame(diad::kFrameOverhead + payload.size());
    frame.resize(
        diad::BuildFrame(self_, dut_, udp_port_, h, payload, frame.data()));
    return frame;
  }
  bool Send(const diad::Header& h, std::span<const uint8_t> payload = {},
            bool keep_seq = false) {
    return SendFrame(Build(h, payload, keep_seq));
  }

  // Every frame the appliance sent out of the wire port, each whole (a
  // zero-copy packet is a chain: its segments in order, as a NIC sends
  // them). `chained`, when given, counts the frames of more than one segment.
  std::vector<Bytes> DrainFrames(size_t* chained = nullptr) {
    std::vector<Bytes> frames;
    void* m = nullptr;
    while (testing_wire::TakeFromWire(from_dut_, &m) == 0) {
      auto* mbuf = static_cast<rte_mbuf*>(m);
      Bytes& frame = frames.emplace_back(mbuf->pkt_len);
      // A pointer into the mbuf when it is one segment, else frame itself.
      const void* bytes =
          rte_pktmbuf_read(mbuf, 0, mbuf->pkt_len, frame.data());
      if (bytes != frame.data()) {
        std::memcpy(frame.data(), bytes, mbuf->pkt_len);
      }
      if (mbuf->nb_segs > 1 && chained != nullptr) ++*chained;
      if (hold_ != nullptr) {
        hold_->push_back(mbuf);
      } else {
        rte_pktmbuf_free(mbuf);
      }
    }
    return frames;
  }
  // While set, drained mbufs go to `held` instead of being freed: a TX
  // queue that has not sent them yet (the caller frees them).
  void HoldDrained(std::vector<rte_mbuf*>* held) { hold_ = held; }

  // The DiAD packets among `frames` (or drained now), in order; learns the
  // appliance's epoch. Sequenced packets accepted in order advance our
  // cumulative ack; `other` receives what was not DiAD.
  std::vector<Received> Parse(const std::vector<Bytes>& frames,
                              std::vector<Bytes>* other = nullptr) {
    std::vector<Received> out;
    for (const Bytes& frame : frames) {
      ParsedFrame parsed;
      ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
      Received r;
      uint32_t payload_offset = 0;
      if (!parsed.layers.is_ipv6 ||
          parsed.layers.l4_offset == PacketLayers::kAbsent ||
          diad::ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()),
                           parsed.layers.l3_offset, parsed.layers.l4_offset,
                           &r.header,
                           &payload_offset) != diad::ParseError::kNone) {
        if (other != nullptr) other->push_back(frame);
        continue;
      }
      if (r.header.src_epoch != 0) dut_epoch_ = r.header.src_epoch;
      if (diad::IsSequenced(r.header.type) && r.header.seq == expected_) {
        ++expected_;
      }
      r.payload.assign(
          frame.begin() + payload_offset,
          frame.begin() + payload_offset + r.header.payload_length);
      out.push_back(std::move(r));
    }
    return out;
  }
  std::vector<Received> Take(std::vector<Bytes>* other = nullptr) {
    return Parse(DrainFrames(), other);
  }

  // The ECN codepoint of the frames it sends (3: CE, as a congested
  // switch leaves them).
  void set_ecn(uint8_t ecn) { self_.ecn = ecn; }

  uint32_t next_seq() const { return next_seq_; }
  void set_next_seq(uint32_t seq) { next_seq_ = seq; }
  uint32_t expected() const { return expected_; }
  uint32_t dut_epoch() const { return dut_epoch_; }
  uint32_t epoch() const { return epoch_; }
  // A restart: a new epoch, sequence numbers from 0, the appliance's
  // epoch forgotten.
  void Restart(uint32_t epoch) {
    epoch_ = epoch;
    next_seq_ = 0;
    expected_ = 0;
    dut_epoch_ = 0;
  }

 private:
  rte_mempool* pool_;
  rte_ring* to_dut_;
  rte_ring* from_dut_;
  std::vector<rte_mbuf*>* hold_ = nullptr;
  diad::Endpoint self_;
  diad::Endpoint dut_;
  uint16_t udp_port_;
  uint32_t epoch_;
  uint32_t dut_epoch_ = 0;
  uint32_t next_seq_ = 0;
  uint32_t expected_ = 0;
};

}  // namespace spinnic::testing_diad

#endif  // SPINNIC_TESTS_COMMON_DIAD_TEST_PEER_H_
