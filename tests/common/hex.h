// Hex text <-> bytes for golden-frame tests ("the frame is this hex").
#ifndef SPINNIC_TESTS_COMMON_HEX_H_
#define SPINNIC_TESTS_COMMON_HEX_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spinnic::testing_hex {

// Pairs of hex digits to bytes (a trailing odd digit is ignored).
inline std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(
        static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Lower-case hex, two digits a byte.
inline std::string ToHex(const uint8_t* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

}  // namespace spinnic::testing_hex

#endif  // SPINNIC_TESTS_COMMON_HEX_H_
