// The packet as a handler sees it: the frame's bytes in place (in the mbuf),
// the offsets the classifier found, and the disposition the handler chooses.
//
// Handlers never see an rte_mbuf: the view is plain C++ so that the handler
// library builds and tests without DPDK. Writes through Bytes() are writes to
// the mbuf that goes out on the wire.
#ifndef SPINNIC_HANDLERS_API_PACKET_H_
#define SPINNIC_HANDLERS_API_PACKET_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace spinnic {

// What happens to the packet after the handler chain has run.
enum class Disposition : uint8_t {
  kForward = 0,  // default: out of the paired port (passthrough)
  kReply = 1,    // back out of the port it arrived on
  kDrop = 2,     // freed and counted as a handler drop
  kConsume = 3,  // the transport keeps it (e.g. deposited into a region)
};

// Layer offsets found by the classifier. kAbsent marks a layer not present.
struct PacketLayers {
  static constexpr uint16_t kAbsent = 0xffff;
  uint16_t l3_offset = kAbsent;       // IPv4/IPv6 header (after VLAN tags)
  uint16_t l4_offset = kAbsent;       // TCP/UDP/ICMP header
  uint16_t payload_offset = kAbsent;  // first byte after the L4 header
  // One past the IP datagram's last byte: where Ethernet padding begins.
  uint16_t l3_end = kAbsent;
  uint16_t ethertype = 0;  // innermost ethertype, host order
  uint8_t ip_proto = 0;    // IPv4 protocol / IPv6 next header
  uint8_t vlan_tags = 0;   // 0, 1 or 2 (QinQ)
  bool is_ipv4 = false;
  bool is_ipv6 = false;
};

class PacketView {
 public:
  PacketView(uint8_t* data, uint32_t length, const PacketLayers& layers,
             uint16_t in_port)
      : data_(data), length_(length), layers_(layers), in_port_(in_port) {}

  // The whole frame from the Ethernet header on; writable in place.
  std::span<uint8_t> Bytes() { return {data_, length_}; }
  std::span<const uint8_t> Bytes() const { return {data_, length_}; }
  uint32_t Length() const { return length_; }

  // Bytes after the L4 header up to the end of the IP datagram (Ethernet
  // padding excluded); empty if there is no L4 header.
  std::span<uint8_t> Payload() {
    uint32_t end = layers_.l3_end == PacketLayers::kAbsent
                       ? length_
                       : std::min<uint32_t>(layers_.l3_end, length_);
    if (layers_.payload_offset == PacketLayers::kAbsent ||
        layers_.payload_offset >= end) {
      return {};
    }
    return {data_ + layers_.payload_offset, end - layers_.payload_offset};
  }

  const PacketLayers& Layers() const { return layers_; }
  uint16_t InPort() const { return in_port_; }

  Disposition GetDisposition() const { return disposition_; }
  void Forward() { disposition_ = Disposition::kForward; }
  void Reply() { disposition_ = Disposition::kReply; }
  void Drop() { disposition_ = Disposition::kDrop; }
  void Consume() { disposition_ = Disposition::kConsume; }

 private:
  uint8_t* data_;
  uint32_t length_;
  PacketLayers layers_;
  uint16_t in_port_;
  Disposition disposition_ = Disposition::kForward;
};

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_PACKET_H_
