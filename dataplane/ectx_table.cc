#include "dataplane/ectx_table.h"

#include <algorithm>
#include <atomic>
#include <limits>

namespace spinnic {

uint64_t EctxTable::NextVersion() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

EctxTable::EctxTable(std::vector<std::shared_ptr<const Ectx>> ectxs)
    : ectxs_(std::move(ectxs)) {
  // Transport-bound ECTXs are found by their stream id or region, never by
  // a frame's headers.
  for (const auto& ectx : ectxs_) {
    if (ectx->binding().kind == kBindNone) {
      matched_.push_back(ectx.get());
      port_mask_ |= ectx->match().in_port_mask;
    } else {
      bound_.emplace(ectx->binding(), ectx.get());
    }
  }
  if (matched_.size() <= kLinearMax) {
    for (const Ectx* ectx : matched_) {
      const MatchRule& rule = ectx->match();
      const bool ports_only =
          rule.ethertype == 0 && !rule.match_ip_proto && !rule.match_src &&
          !rule.match_dst && rule.src_port_first == 0 &&
          rule.src_port_last == 0xffff && rule.dst_port_first == 0 &&
          rule.dst_port_last == 0xffff && ectx->filter() == nullptr;
      linear_.push_back({.ectx = ectx,
                         .in_port_mask = rule.in_port_mask,
                         .ports_only = ports_only});
    }
    // A port's first rule decides EveryFrameOn: if it names only ports, no
    // later rule ever sees the port's frames.
    uint64_t decided = 0;
    for (const LinearRule& rule : linear_) {
      const uint64_t fresh = rule.in_port_mask & ~decided;
      decided |= rule.in_port_mask;
      if (!rule.ports_only) continue;
      for (uint32_t port = 0; port < every_frame_.size(); ++port) {
        if ((fresh >> port) & 1) every_frame_[port] = rule.ectx;
      }
    }
    return;
  }
  for (uint32_t i = 0; i < matched_.size(); ++i) {
    const MatchRule& rule = matched_[i]->match();
    Shape shape = ShapeOf(rule);
    auto it =
        std::find_if(shapes_.begin(), shapes_.end(),
                     [&](const ShapeTable& t) { return t.shape == shape; });
    if (it == shapes_.end()) {
      shapes_.push_back({.shape = shape, .first = i});
      it = shapes_.end() - 1;
    }
    // Indices arrive in match order, so each list stays sorted.
    it->rules[RuleKey(rule, shape)].push_back(i);
  }
  std::sort(shapes_.begin(), shapes_.end(),
            [](const ShapeTable& a, const ShapeTable& b) {
              return a.first < b.first;
            });
}

EctxTable::Shape EctxTable::ShapeOf(const MatchRule& rule) {
  Shape shape;
  shape.ethertype = rule.ethertype != 0;
  shape.ip_proto = rule.match_ip_proto;
  shape.src = rule.match_src;
  shape.src_bits = rule.match_src ? std::min<uint8_t>(rule.src.length, 128) : 0;
  shape.dst = rule.match_dst;
  shape.dst_bits = rule.match_dst ? std::min<uint8_t>(rule.dst.length, 128) : 0;
  shape.src_port = rule.src_port_first == rule.src_port_last;
  shape.dst_port = rule.dst_port_first == rule.dst_port_last;
  return shape;
}

EctxTable::Key EctxTable::RuleKey(const MatchRule& rule, const Shape& shape) {
  Key key;
  if (shape.ethertype) key.ethertype = rule.ethertype;
  if (shape.ip_proto) key.ip_proto = rule.ip_proto;
  if (shape.src) {
    key.src = MaskedAddress(rule.src.address, shape.src_bits);
    key.families |= rule.src.is_ipv4 ? 1 : 0;
  }
  if (shape.dst) {
    key.dst = MaskedAddress(rule.dst.address, shape.dst_bits);
    key.families |= rule.dst.is_ipv4 ? 2 : 0;
  }
  if (shape.src_port) key.src_port = rule.src_port_first;
  if (shape.dst_port) key.dst_port = rule.dst_port_first;
  return key;
}

bool EctxTable::FrameKey(const ParsedFrame& frame, const Shape& shape,
                         Key* key) {
  const PacketLayers& l = frame.layers;
  const bool has_l3 = l.is_ipv4 || l.is_ipv6;
  if ((shape.ip_proto || shape.src || shape.dst) && !has_l3) return false;
  if ((shape.src_port || shape.dst_port) && !frame.has_l4_ports) return false;
  if (shape.ethertype) key->ethertype = l.ethertype;
  if (shape.ip_proto) key->ip_proto = l.ip_proto;
  if (shape.src) {
    key->src = MaskedAddress(frame.src_addr, shape.src_bits);
    key->families |= l.is_ipv4 ? 1 : 0;
  }
  if (shape.dst) {
    key->dst = MaskedAddress(frame.dst_addr, shape.dst_bits);
    key->families |= l.is_ipv4 ? 2 : 0;
  }
  if (shape.src_port) key->src_port = frame.src_port;
  if (shape.dst_port) key->dst_port = frame.dst_port;
  return true;
}

const Ectx* EctxTable::MatchByShape(const ParsedFrame& frame, uint16_t in_port,
                                    const rte_mbuf* packet) const {
  if (frame.frame_class == FrameClass::kDrop) return nullptr;
  uint32_t best = std::numeric_limits<uint32_t>::max();
  for (const ShapeTable& table : shapes_) {
    if (table.first >= best) break;  // no rule of this or later shapes wins
    Key key;
    if (!FrameKey(frame, table.shape, &key)) continue;
    auto it = table.rules.find(key);
    if (it == table.rules.end()) continue;
    // The fields named by the shape matched; the rest (ingress ports, port
    // ranges, the pcap_filter) is checked here, and a miss tries the next
    // rule of the same key.
    for (uint32_t index : it->second) {
      if (index >= best) break;
      if (matched_[index]->Matches(frame, in_port, packet)) {
        best = index;
        break;
      }
    }
  }
  return best < matched_.size() ? matched_[best] : nullptr;
}

}  // namespace spinnic
