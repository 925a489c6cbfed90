// The packet as a handler sees it: the frame's bytes in place (in the mbuf),
// the offsets the classifier found, and the disposition the handler chooses.
//
// Handlers never see an rte_mbuf: the view is plain C++ so that the handler
// library builds and tests without DPDK. Writes through Bytes() are writes to
// the mbuf that goes out on the wire. Message() says which message the packet
// belongs to, so that a handler of a multi-packet message can place its bytes
// without parsing the transport's headers itself.
#ifndef SPINNIC_HANDLERS_API_PACKET_H_
#define SPINNIC_HANDLERS_API_PACKET_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

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

// Which transport delivered the message a packet is part of.
enum class MessageTransport : uint8_t {
  kPassthrough = 0,  // a frame matched by a rule: a message of one packet
  kDiadStream = 1,   // a DiAD stream message (diad { stream_id })
  kDiadWrite = 2,    // a DiAD remote write (diad { write_region })
  kRoceSend = 3,     // an RDMA SEND on a QP (roce { qpn })
  kRoceWrite = 4,    // an RDMA WRITE (write_region)
};

// The message a packet belongs to, as its transport knows it. Transports
// deliver a message's packets in order but a handler sees them one at a
// time; these fields let it place each packet's Payload() in a message-wide
// layout (e.g. a datatype scatter) without per-message state of its own and
// without knowing any transport's wire format. The transport fills it with a
// few stores per packet; it is valid only during the handler call.
struct MessageInfo {
  MessageTransport transport = MessageTransport::kPassthrough;
  // Who sent it, so that messages from different senders can be told apart:
  // the DiAD peer's slot (stable while the peer exists), the RoCE source
  // QPN (the QP's remote QPN); 0 for passthrough.
  uint32_t source = 0;
  // Byte offset of Payload()'s first byte within the message. Exact for
  // every packet, middle and last ones included: the transports track it
  // (DiAD carries it in each header; RoCE counts it on the QP).
  uint64_t offset = 0;
  // The whole message's length, when the transport knows it; 0 when it does
  // not yet. DiAD headers carry it on every packet and a RoCE WRITE's RETH
  // gives it on the first, but a RoCE SEND's length is only known on its
  // last packet (offset + payload), so check the extent where it is known.
  uint64_t length = 0;
  // Where the transport would store this packet's payload: the DiAD write
  // address or RoCE WRITE virtual address of Payload()'s first byte (the
  // message's target is address - offset); 0 for streams, SENDs and
  // passthrough, which have no target address.
  uint64_t address = 0;
  // The message's key on its transport: a DiAD stream message's stream id,
  // a DiAD write's rkey (of the region it writes); 0 for RoCE and
  // passthrough. Lets a handler answer or pass a message on under the key
  // it came with (pingpong's and bcast's defaults).
  uint32_t key = 0;
};

class PacketView {
 public:
  // A passthrough packet: a message of one packet, its payload the whole
  // message. `layers` must outlive the view: it is read where the classifier
  // wrote it, not copied. A copy, right after the parse, read the fields back
  // wider than they were stored: a store-forwarding stall on every matched
  // frame (2.5 of the null handler's 40.8 cycles, bench/cost).
  PacketView(uint8_t* data, uint32_t length, const PacketLayers& layers,
             uint16_t in_port)
      : data_(data),
        length_(length),
        layers_(&layers),
        in_port_(in_port),
        message_length_due_(true) {}
  // A packet of a transport's message.
  PacketView(uint8_t* data, uint32_t length, const PacketLayers& layers,
             uint16_t in_port, const MessageInfo& message)
      : data_(data),
        length_(length),
        layers_(&layers),
        in_port_(in_port),
        message_(message) {}
  // The layers are held by reference: a temporary would not outlive the view.
  PacketView(uint8_t*, uint32_t, PacketLayers&&, uint16_t) = delete;
  PacketView(uint8_t*, uint32_t, PacketLayers&&, uint16_t,
             const MessageInfo&) = delete;

  // The whole frame from the Ethernet header on; writable in place.
  std::span<uint8_t> Bytes() { return {data_, length_}; }
  std::span<const uint8_t> Bytes() const { return {data_, length_}; }
  uint32_t Length() const { return length_; }

  // Bytes after the L4 header up to the end of the IP datagram (Ethernet
  // padding excluded); empty if there is no L4 header.
  std::span<uint8_t> Payload() {
    uint32_t start = PayloadStart();
    return {data_ + start, PayloadEnd() - start};
  }
  std::span<const uint8_t> Payload() const {
    uint32_t start = PayloadStart();
    return {data_ + start, PayloadEnd() - start};
  }

  const PacketLayers& Layers() const { return *layers_; }
  uint16_t InPort() const { return in_port_; }

  // The message this packet is part of (see MessageInfo).
  const MessageInfo& Message() const {
    if (message_length_due_) [[unlikely]] {
      std::construct_at(&message_.info)->length = PayloadEnd() - PayloadStart();
      message_length_due_ = false;
    }
    return message_.info;
  }
  // For transports and tests: the message as the transport knows it.
  void SetMessage(const MessageInfo& message) {
    std::construct_at(&message_.info, message);
    message_length_due_ = false;
  }

  Disposition GetDisposition() const { return disposition_; }
  void Forward() { disposition_ = Disposition::kForward; }
  void Reply() { disposition_ = Disposition::kReply; }
  void Drop() { disposition_ = Disposition::kDrop; }
  void Consume() { disposition_ = Disposition::kConsume; }

 private:
  // [PayloadStart(), PayloadEnd()) is Payload(); empty (start == end) when
  // there is no L4 header.
  uint32_t PayloadEnd() const {
    return layers_->l3_end == PacketLayers::kAbsent
               ? length_
               : std::min<uint32_t>(layers_->l3_end, length_);
  }
  uint32_t PayloadStart() const {
    uint32_t end = PayloadEnd();
    return layers_->payload_offset == PacketLayers::kAbsent ||
                   layers_->payload_offset >= end
               ? end
               : layers_->payload_offset;
  }

  uint8_t* data_;
  uint32_t length_;
  const PacketLayers* layers_;
  uint16_t in_port_;
  Disposition disposition_ = Disposition::kForward;
  // A passthrough packet's MessageInfo (its length is the payload's) is
  // built when a handler first asks: most never do, and every matched frame
  // would pay for it. Until then `message_` holds no object.
  mutable bool message_length_due_ = false;
  union LazyMessage {
    LazyMessage() {}
    explicit LazyMessage(const MessageInfo& message) : info(message) {}
    MessageInfo info;
  };
  static_assert(std::is_trivially_copyable_v<MessageInfo> &&
                std::is_trivially_destructible_v<MessageInfo>);
  mutable LazyMessage message_;
};

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_PACKET_H_
