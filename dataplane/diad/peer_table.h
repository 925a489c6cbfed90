// One immutable version of the DiAD peers, published to the HPUs like the
// ECTX and region tables (RCU). A peer keeps its slot while it exists; a
// peer removed and added again gets a new generation, which tells the HPUs
// to start its channels afresh.
#ifndef SPINNIC_DATAPLANE_DIAD_PEER_TABLE_H_
#define SPINNIC_DATAPLANE_DIAD_PEER_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dataplane/diad/diad_config.h"

namespace spinnic::diad {

struct Peer {
  uint32_t slot = 0;
  uint32_t generation = 0;
  std::string name;
  NodeAddress node{};
  MacAddress mac{};
  Recovery recovery = Recovery::kGoBackN;
};

class PeerTable {
 public:
  PeerTable() = default;
  explicit PeerTable(std::vector<Peer> peers) : peers_(std::move(peers)) {
    by_node_.reserve(peers_.size());
    for (const Peer& peer : peers_) {
      by_node_[Key(peer.node)] = &peer;
      by_name_[peer.name] = &peer;
      if (peer.slot >= by_slot_.size()) by_slot_.resize(peer.slot + 1);
      by_slot_[peer.slot] = &peer;
    }
  }
  // Holds pointers into itself.
  PeerTable(const PeerTable&) = delete;
  PeerTable& operator=(const PeerTable&) = delete;

  // The peer with node address `node`, or nullptr: one hash probe.
  const Peer* FindByNode(const uint8_t* node) const {
    auto it = by_node_.find(Key(node));
    return it == by_node_.end() ? nullptr : it->second;
  }
  const Peer* FindBySlot(uint32_t slot) const {
    return slot < by_slot_.size() ? by_slot_[slot] : nullptr;
  }
  const Peer* FindByName(absl::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const std::vector<Peer>& peers() const { return peers_; }

 private:
  using NodeKey = std::pair<uint64_t, uint64_t>;
  static NodeKey Key(const uint8_t* node) {
    uint64_t hi = 0;
    uint64_t lo = 0;
    for (int i = 0; i < 8; ++i) hi = hi << 8 | node[i];
    for (int i = 8; i < 16; ++i) lo = lo << 8 | node[i];
    return {hi, lo};
  }
  static NodeKey Key(const NodeAddress& node) { return Key(node.data()); }

  std::vector<Peer> peers_;
  absl::flat_hash_map<NodeKey, const Peer*> by_node_;
  std::vector<const Peer*> by_slot_;
  absl::flat_hash_map<std::string, const Peer*> by_name_;
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_PEER_TABLE_H_
