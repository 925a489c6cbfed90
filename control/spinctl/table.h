// spinctl's output for people: aligned tables, key: value lines, hex dumps.
#ifndef SPINNIC_CONTROL_SPINCTL_TABLE_H_
#define SPINNIC_CONTROL_SPINCTL_TABLE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace spinnic::spinctl {

// Columns sized to their widest cell; columns holding only numbers are
// right-aligned so that magnitudes line up.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Every line starts with `indent`; no trailing spaces.
  void Print(std::FILE* out, absl::string_view indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "key: value" lines with the values aligned.
class KeyValues {
 public:
  void Add(std::string key, std::string value);
  void Print(std::FILE* out, absl::string_view indent = "") const;

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

// hexdump -C style: "00000064  01 02 ...  |..|", offsets from `base`.
std::string HexDump(absl::string_view data, uint64_t base);

// Lower-case hex, no separators.
std::string Hex(absl::string_view data);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_TABLE_H_
