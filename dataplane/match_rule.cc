#include "dataplane/match_rule.h"

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace spinnic {
namespace {

// The 16-byte form of ::ffff:0:0/96, the IPv4-mapped block.
constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0,    0,
                                       0, 0, 0, 0, 0xff, 0xff};
constexpr uint32_t kMappedPrefixBits = 96;

// Input is echoed in error messages; keep them printable and short even if a
// client sends a megabyte of binary.
std::string Quote(absl::string_view text) {
  constexpr size_t kMaxEcho = 64;
  std::string quoted =
      absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxEcho)), "\"");
  if (text.size() > kMaxEcho) quoted += "...";
  return quoted;
}

std::string FormatAddress(const std::array<uint8_t, 16>& address,
                          bool is_ipv4) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_ipv4) {
    inet_ntop(AF_INET, address.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, address.data(), buf, sizeof(buf));
  }
  return buf;
}

}  // namespace

absl::StatusOr<AddressPrefix> AddressPrefix::Parse(absl::string_view text) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "empty address prefix; write e.g. \"10.0.0.0/8\" or \"fd00::/64\"");
  }
  const size_t slash = text.find('/');
  const absl::string_view addr_text = text.substr(0, slash);
  // inet_pton wants a NUL-terminated string; a NUL inside `text` would
  // otherwise cut it short and let trailing garbage through, so only the
  // characters an address can contain are copied.
  char buf[INET6_ADDRSTRLEN] = {};
  bool chars_ok = !addr_text.empty() && addr_text.size() < sizeof(buf);
  bool has_colon = false;
  for (char c : addr_text) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                     (c >= 'A' && c <= 'F');
    chars_ok = chars_ok && (hex || c == ':' || c == '.');
    has_colon = has_colon || c == ':';
  }
  if (!chars_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quote(text), " is not an address prefix; write e.g. ",
        "\"10.0.0.0/8\", \"10.1.2.3\", \"fd00::/64\" or ", "\"fd00::1\""));
  }
  std::memcpy(buf, addr_text.data(), addr_text.size());

  AddressPrefix prefix;
  uint32_t max_len = 128;
  if (has_colon) {
    if (inet_pton(AF_INET6, buf, prefix.address.data()) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          Quote(addr_text), " in ", Quote(text), " is not an IPv6 address"));
    }
  } else {
    uint8_t v4[4];
    if (inet_pton(AF_INET, buf, v4) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(Quote(addr_text), " in ", Quote(text),
                       " is not an IPv4 address (dotted quad, decimal)"));
    }
    std::memcpy(prefix.address.data(), kMappedPrefix, sizeof(kMappedPrefix));
    std::memcpy(prefix.address.data() + 12, v4, 4);
    prefix.is_ipv4 = true;
    max_len = 32;
  }

  uint32_t user_len = max_len;
  if (slash != absl::string_view::npos) {
    const absl::string_view len_text = text.substr(slash + 1);
    bool digits_ok = !len_text.empty() && len_text.size() <= 3;
    uint32_t value = 0;
    for (char c : len_text) {
      digits_ok = digits_ok && c >= '0' && c <= '9';
      value = value * 10 + static_cast<uint32_t>(c - '0');
    }
    if (!digits_ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prefix length ", Quote(len_text), " in ", Quote(text),
          " is not a number; write e.g. \"/24\", or leave it out for a host"));
    }
    if (value > max_len) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prefix length ", value, " in ", Quote(text), " is too long for ",
          prefix.is_ipv4 ? "IPv4" : "IPv6", "; use 0..", max_len));
    }
    user_len = value;
  }

  // `length` counts bits of the 16-byte form, so an IPv4 /n covers the
  // ::ffff: block too and Contains needs no per-family case.
  const uint32_t bits =
      prefix.is_ipv4 ? kMappedPrefixBits + user_len : user_len;
  const std::array<uint8_t, 16> masked = MaskedAddress(prefix.address, bits);
  if (masked != prefix.address) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quote(text), " has host bits set beyond /", user_len, "; write \"",
        FormatAddress(masked, prefix.is_ipv4), "/", user_len,
        "\" for the network, or \"", addr_text, "\" for the single host"));
  }
  // An IPv6 prefix inside ::ffff:0:0/96 could never match: IPv4 frames are
  // IPv4 family, and mapped addresses do not appear in IPv6 headers.
  if (!prefix.is_ipv4 && bits >= kMappedPrefixBits &&
      std::memcmp(prefix.address.data(), kMappedPrefix,
                  sizeof(kMappedPrefix)) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quote(text),
        " is an IPv4-mapped IPv6 prefix, which matches no frame; write the "
        "IPv4 form \"",
        FormatAddress(prefix.address, /*is_ipv4=*/true), "/",
        bits - kMappedPrefixBits, "\""));
  }
  prefix.length = static_cast<uint8_t>(bits);
  return prefix;
}

bool AddressPrefix::Contains(const std::array<uint8_t, 16>& candidate) const {
  // Two masked 64-bit compares instead of a byte loop: no data-dependent
  // branches on the per-packet path. Lengths above 128 act as 128.
  const uint32_t bits = length > 128 ? 128 : length;
  const uint64_t hi_mask = HighMask(bits > 64 ? 64 : bits);
  const uint64_t lo_mask = HighMask(bits > 64 ? bits - 64 : 0);
  const uint64_t hi = LoadBe64(candidate.data()) ^ LoadBe64(address.data());
  const uint64_t lo =
      LoadBe64(candidate.data() + 8) ^ LoadBe64(address.data() + 8);
  return ((hi & hi_mask) | (lo & lo_mask)) == 0;
}

bool MatchRule::Matches(const ParsedFrame& frame, uint16_t in_port) const {
  // Half-parsed fields of a frame being dropped must not select a handler.
  if (frame.frame_class == FrameClass::kDrop) return false;

  // Port ids past the mask's width only pass a rule that restricts nothing.
  const bool port_ok = in_port < 64 ? ((in_port_mask >> in_port) & 1) != 0
                                    : in_port_mask == kAllPorts;
  const PacketLayers& l = frame.layers;
  const bool has_l3 = l.is_ipv4 || l.is_ipv6;

  bool ok = port_ok;
  ok &= ethertype == 0 || l.ethertype == ethertype;
  ok &= !match_ip_proto || (has_l3 && l.ip_proto == ip_proto);
  ok &= !match_src ||
        (has_l3 && src.is_ipv4 == l.is_ipv4 && src.Contains(frame.src_addr));
  ok &= !match_dst ||
        (has_l3 && dst.is_ipv4 == l.is_ipv4 && dst.Contains(frame.dst_addr));

  const bool names_src_ports = src_port_first != 0 || src_port_last != 0xffff;
  const bool names_dst_ports = dst_port_first != 0 || dst_port_last != 0xffff;
  ok &= !(names_src_ports || names_dst_ports) || frame.has_l4_ports;
  ok &= src_port_first <= frame.src_port && frame.src_port <= src_port_last;
  ok &= dst_port_first <= frame.dst_port && frame.dst_port <= dst_port_last;
  return ok;
}

}  // namespace spinnic
