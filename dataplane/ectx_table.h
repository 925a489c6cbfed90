// One immutable version of the installed ECTXs and their match rules. The
// control side builds a new version for every change and publishes it by
// pointer swap; HPUs read whichever version was current when their loop
// iteration began (RCU, see dataplane.cc).
//
// Lookup is flat in the number of rules: rules are grouped by shape (which
// fields they name, prefix lengths, exact or ranged L4 ports), each shape
// has a hash table keyed by the named fields masked to the shape, and a
// frame probes one table per shape (tuple space search, as Open vSwitch's
// classifier does). The cost grows with the number of distinct shapes, not
// of rules. Small tables keep the plain first-match walk, which is cheaper
// than hashing below kLinearMax rules (bench/micro/hpu_path_bench).
//
// A rule's pcap_filter takes no part in its shape or key: the hash narrows
// the candidates by the rule's fields only (a filter-only rule has the
// empty shape, whose single key every frame hits), and each candidate is
// then checked in full, filter included, before it is taken. A candidate
// whose filter fails is skipped like one whose port range fails, so the
// search goes on to the next rule in match order and a filtered rule never
// matches on its fields alone.
#ifndef SPINNIC_DATAPLANE_ECTX_TABLE_H_
#define SPINNIC_DATAPLANE_ECTX_TABLE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "dataplane/binding.h"
#include "dataplane/ectx.h"

namespace spinnic {

class EctxTable {
 public:
  // Up to this many rules, Match walks them in order.
  static constexpr size_t kLinearMax = 8;

  EctxTable() = default;
  // `ectxs` in match order (priority, then install order).
  explicit EctxTable(std::vector<std::shared_ptr<const Ectx>> ectxs);

  // Whether any rule could match a frame from `in_port`; false lets the
  // HPU forward that port's frames without parsing them for the rules.
  bool MayMatch(uint16_t in_port) const {
    return in_port < 64 && (port_mask_ & (uint64_t{1} << in_port)) != 0;
  }
  // The ECTX that takes every frame from `in_port` the classifier does not
  // drop (the first rule naming the port names nothing else: a handler on
  // every frame), or nullptr. Lets the HPU match a burst once.
  const Ectx* EveryFrameOn(uint16_t in_port) const {
    return in_port < every_frame_.size() ? every_frame_[in_port] : nullptr;
  }
  // The first ECTX (in match order) whose rule matches, or nullptr. Ports
  // that no rule names cost one AND. `packet` is the frame's mbuf, read
  // only by rules with a pcap_filter (Ectx::Matches: fields first, then the
  // filter); with nullptr such rules never match.
  const Ectx* Match(const ParsedFrame& frame, uint16_t in_port,
                    const rte_mbuf* packet) const {
    if (!MayMatch(in_port)) return nullptr;
    if (shapes_.empty()) {
      for (const LinearRule& rule : linear_) {
        if (rule.ports_only) {
          // Ectx::Matches for a rule that names nothing but ingress ports
          // (a handler on every frame), without its out-of-line call:
          // about 60 instructions per frame (bench/micro/hpu_loop_bench).
          if (frame.frame_class != FrameClass::kDrop &&
              ((rule.in_port_mask >> in_port) & 1) != 0) {
            return rule.ectx;
          }
          continue;
        }
        if (rule.ectx->Matches(frame, in_port, packet)) return rule.ectx;
      }
      return nullptr;
    }
    return MatchByShape(frame, in_port, packet);
  }

  // The ECTX bound to the messages of (kind, key), or nullptr: the
  // transports' lookup for a message's first packet (binding.h).
  const Ectx* FindBound(BindingKind kind, uint64_t key) const {
    auto it = bound_.find(MessageBinding{kind, key});
    return it == bound_.end() ? nullptr : it->second;
  }
  // Table versions are numbered in creation order, so that an HPU can tell
  // a new version from an old one at a reused address (derived caches).
  uint64_t version() const { return version_; }

  const std::vector<std::shared_ptr<const Ectx>>& ectxs() const {
    return ectxs_;
  }
  // Distinct rule shapes (0 while the table is walked linearly).
  size_t shape_count() const { return shapes_.size(); }

 private:
  // What a shape names. Rules of one shape hash the same fields.
  struct Shape {
    bool ethertype = false;
    bool ip_proto = false;
    bool src = false;
    bool dst = false;
    uint8_t src_bits = 0;  // prefix length, in the 16-byte address form
    uint8_t dst_bits = 0;
    bool src_port = false;  // an exact L4 port (first == last)
    bool dst_port = false;
    bool operator==(const Shape&) const = default;
  };

  // The named fields, masked to the shape; unnamed fields are zero.
  struct Key {
    std::array<uint8_t, 16> src{};
    std::array<uint8_t, 16> dst{};
    uint16_t ethertype = 0;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint8_t ip_proto = 0;
    uint8_t families = 0;  // bit 0: src is IPv4, bit 1: dst is IPv4
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.src, k.dst, k.ethertype, k.src_port,
                        k.dst_port, k.ip_proto, k.families);
    }
  };

  struct ShapeTable {
    Shape shape;
    uint32_t first = 0;  // smallest match-order index of its rules
    // Rule indices sharing a key, in match order; each is checked in full
    // (ingress ports, port ranges) before it is taken.
    absl::flat_hash_map<Key, absl::InlinedVector<uint32_t, 2>> rules;
  };

  static Shape ShapeOf(const MatchRule& rule);
  static Key RuleKey(const MatchRule& rule, const Shape& shape);
  // False when the frame lacks a layer the shape names.
  static bool FrameKey(const ParsedFrame& frame, const Shape& shape, Key* key);

  const Ectx* MatchByShape(const ParsedFrame& frame, uint16_t in_port,
                           const rte_mbuf* packet) const;

  std::vector<std::shared_ptr<const Ectx>> ectxs_;
  // The ECTXs matched against frames, in match order (indices of shapes).
  std::vector<const Ectx*> matched_;
  // matched_ for the first-match walk, with what it needs inline.
  struct LinearRule {
    const Ectx* ectx;
    uint64_t in_port_mask;
    // The rule names no field but in_port_mask and has no pcap_filter.
    bool ports_only;
  };
  std::vector<LinearRule> linear_;
  struct BindingHash {
    size_t operator()(const MessageBinding& b) const {
      return absl::HashOf(b.kind, b.key);
    }
  };
  absl::flat_hash_map<MessageBinding, const Ectx*, BindingHash> bound_;
  static uint64_t NextVersion();
  uint64_t version_ = NextVersion();
  uint64_t port_mask_ = 0;
  // EveryFrameOn's answers, by ingress port (the linear walk only).
  std::array<const Ectx*, 64> every_frame_{};
  // By `first`, so that the search can stop at the first shape that cannot
  // beat what it found.
  std::vector<ShapeTable> shapes_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_ECTX_TABLE_H_
