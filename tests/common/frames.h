// Builders of well-formed test frames (correct lengths and checksums), so
// that tests state frames as values: "this UDP datagram in, that one out".
#ifndef SPINNIC_TESTS_COMMON_FRAMES_H_
#define SPINNIC_TESTS_COMMON_FRAMES_H_

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace spinnic::frames {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;

inline constexpr Mac kMacA = {0x02, 0, 0, 0, 0, 0x0a};
inline constexpr Mac kMacB = {0x02, 0, 0, 0, 0, 0x0b};

inline void Put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

// RFC 1071 sum, not yet folded.
inline uint32_t SumWords(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (n & 1) sum += p[n - 1] << 8;
  return sum;
}

inline uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

inline Bytes Ethernet(const Mac& src, const Mac& dst, uint16_t ethertype) {
  Bytes b(dst.begin(), dst.end());
  b.insert(b.end(), src.begin(), src.end());
  b.push_back(static_cast<uint8_t>(ethertype >> 8));
  b.push_back(static_cast<uint8_t>(ethertype));
  return b;
}

inline std::array<uint8_t, 4> Ip4(const std::string& text) {
  std::array<uint8_t, 4> a{};
  inet_pton(AF_INET, text.c_str(), a.data());
  return a;
}

inline std::array<uint8_t, 16> Ip6(const std::string& text) {
  std::array<uint8_t, 16> a{};
  inet_pton(AF_INET6, text.c_str(), a.data());
  return a;
}

// An IPv4 packet carrying `l4` (whose checksum field, if any, at
// `l4_checksum_at` is filled with the pseudo-header checksum when >= 0).
inline Bytes Ipv4Frame(const Mac& src, const Mac& dst, const std::string& sip,
                       const std::string& dip, uint8_t proto, Bytes l4,
                       int l4_checksum_at, bool pseudo_header = true) {
  Bytes f = Ethernet(src, dst, 0x0800);
  size_t ip = f.size();
  f.resize(ip + 20);
  f[ip] = 0x45;
  Put16(f, ip + 2, static_cast<uint16_t>(20 + l4.size()));
  Put16(f, ip + 4, 0x1234);
  f[ip + 8] = 64;
  f[ip + 9] = proto;
  auto s = Ip4(sip), d = Ip4(dip);
  std::copy(s.begin(), s.end(), f.begin() + ip + 12);
  std::copy(d.begin(), d.end(), f.begin() + ip + 16);
  Put16(f, ip + 10, Fold(SumWords(&f[ip], 20)));
  if (l4_checksum_at >= 0) {
    uint32_t sum = 0;
    if (pseudo_header) {
      sum = SumWords(&f[ip + 12], 8);
      sum += proto + static_cast<uint32_t>(l4.size());
    }
    uint16_t c = Fold(SumWords(l4.data(), l4.size(), sum));
    if (proto == 17 && c == 0) c = 0xffff;
    Put16(l4, l4_checksum_at, c);
  }
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

inline Bytes Ipv6Frame(const Mac& src, const Mac& dst, const std::string& sip,
                       const std::string& dip, uint8_t next, Bytes l4,
                       int l4_checksum_at) {
  Bytes f = Ethernet(src, dst, 0x86dd);
  size_t ip = f.size();
  f.resize(ip + 40);
  f[ip] = 0x60;
  Put16(f, ip + 4, static_cast<uint16_t>(l4.size()));
  f[ip + 6] = next;
  f[ip + 7] = 64;
  auto s = Ip6(sip), d = Ip6(dip);
  std::copy(s.begin(), s.end(), f.begin() + ip + 8);
  std::copy(d.begin(), d.end(), f.begin() + ip + 24);
  if (l4_checksum_at >= 0) {
    uint32_t sum = SumWords(&f[ip + 8], 32);
    sum += next + static_cast<uint32_t>(l4.size());
    uint16_t c = Fold(SumWords(l4.data(), l4.size(), sum));
    if (next == 17 && c == 0) c = 0xffff;
    Put16(l4, l4_checksum_at, c);
  }
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

inline Bytes UdpHeader(uint16_t sport, uint16_t dport, const Bytes& payload) {
  // Sized once and copied into: growing an 8-byte vector by insert trips
  // GCC 12's -Warray-bounds false positive.
  Bytes u(8 + payload.size());
  Put16(u, 0, sport);
  Put16(u, 2, dport);
  Put16(u, 4, static_cast<uint16_t>(8 + payload.size()));
  std::copy(payload.begin(), payload.end(), u.begin() + 8);
  return u;
}

inline Bytes Udp4(const Mac& src, const Mac& dst, const std::string& sip,
                  const std::string& dip, uint16_t sport, uint16_t dport,
                  const Bytes& payload) {
  return Ipv4Frame(src, dst, sip, dip, 17, UdpHeader(sport, dport, payload), 6);
}

inline Bytes Udp6(const Mac& src, const Mac& dst, const std::string& sip,
                  const std::string& dip, uint16_t sport, uint16_t dport,
                  const Bytes& payload) {
  return Ipv6Frame(src, dst, sip, dip, 17, UdpHeader(sport, dport, payload), 6);
}

inline Bytes Tcp4(const Mac& src, const Mac& dst, const std::string& sip,
                  const std::string& dip, uint16_t sport, uint16_t dport,
                  const Bytes& payload) {
  Bytes t(20);
  Put16(t, 0, sport);
  Put16(t, 2, dport);
  t[7] = 1;      // sequence number
  t[12] = 0x50;  // data offset 5 words
  t[13] = 0x18;  // PSH|ACK
  Put16(t, 14, 65535);
  t.insert(t.end(), payload.begin(), payload.end());
  return Ipv4Frame(src, dst, sip, dip, 6, t, 16);
}

inline Bytes Icmp4Echo(const Mac& src, const Mac& dst, const std::string& sip,
                       const std::string& dip, uint16_t id, uint16_t seq,
                       const Bytes& payload, uint8_t type = 8) {
  Bytes i(8);
  i[0] = type;
  Put16(i, 4, id);
  Put16(i, 6, seq);
  i.insert(i.end(), payload.begin(), payload.end());
  return Ipv4Frame(src, dst, sip, dip, 1, i, 2, /*pseudo_header=*/false);
}

inline Bytes Icmp6Echo(const Mac& src, const Mac& dst, const std::string& sip,
                       const std::string& dip, uint16_t id, uint16_t seq,
                       const Bytes& payload, uint8_t type = 128) {
  Bytes i(8);
  i[0] = type;
  Put16(i, 4, id);
  Put16(i, 6, seq);
  i.insert(i.end(), payload.begin(), payload.end());
  return Ipv6Frame(src, dst, sip, dip, 58, i, 2);
}

// Inserts an 802.1Q tag after the MAC addresses.
inline Bytes WithVlan(Bytes frame, uint16_t vid, uint16_t tpid = 0x8100) {
  Bytes tag = {static_cast<uint8_t>(tpid >> 8), static_cast<uint8_t>(tpid),
               static_cast<uint8_t>(vid >> 8), static_cast<uint8_t>(vid)};
  frame.insert(frame.begin() + 12, tag.begin(), tag.end());
  return frame;
}

inline Bytes Raw(const Mac& src, const Mac& dst, uint16_t ethertype,
                 const Bytes& payload) {
  Bytes f = Ethernet(src, dst, ethertype);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

inline Bytes Arp(const Mac& sender, const std::string& sip,
                 const std::string& tip) {
  Bytes a = {0, 1, 8, 0, 6, 4, 0, 1};
  a.insert(a.end(), sender.begin(), sender.end());
  auto s = Ip4(sip), t = Ip4(tip);
  a.insert(a.end(), s.begin(), s.end());
  a.insert(a.end(), 6, 0);
  a.insert(a.end(), t.begin(), t.end());
  a.resize(46, 0);  // minimum Ethernet payload
  return Raw(sender, Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806, a);
}

}  // namespace spinnic::frames

#endif  // SPINNIC_TESTS_COMMON_FRAMES_H_
