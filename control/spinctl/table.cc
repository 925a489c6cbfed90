#include "control/spinctl/table.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spinnic::spinctl {
namespace {

bool IsNumber(absl::string_view cell) {
  if (absl::StartsWith(cell, "0x")) cell.remove_prefix(2);
  if (cell.empty()) return false;
  for (char c : cell) {
    if (!absl::ascii_isxdigit(c) && c != '.') return false;
  }
  return absl::ascii_isdigit(cell[0]);
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::Print(std::FILE* out, absl::string_view indent) const {
  size_t columns = headers_.size();
  std::vector<size_t> width(columns);
  std::vector<bool> numeric(columns, true);
  for (size_t c = 0; c < columns; ++c) {
    width[c] = headers_[c].size();
    bool any = false;
    for (const std::vector<std::string>& row : rows_) {
      width[c] = std::max(width[c], row[c].size());
      if (row[c].empty() || row[c] == "-") continue;
      any = true;
      if (!IsNumber(row[c])) numeric[c] = false;
    }
    if (!any) numeric[c] = false;
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line(indent);
    for (size_t c = 0; c < columns; ++c) {
      if (c > 0) line += "  ";
      size_t pad = width[c] - cells[c].size();
      if (numeric[c]) line.append(pad, ' ');
      line += cells[c];
      if (!numeric[c]) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  };
  print_row(headers_);
  for (const std::vector<std::string>& row : rows_) print_row(row);
}

void KeyValues::Add(std::string key, std::string value) {
  lines_.emplace_back(std::move(key), std::move(value));
}

void KeyValues::Print(std::FILE* out, absl::string_view indent) const {
  size_t width = 0;
  for (const auto& [key, value] : lines_) width = std::max(width, key.size());
  for (const auto& [key, value] : lines_) {
    std::string line = absl::StrCat(indent, key, ":");
    if (!value.empty()) {
      line.append(width - key.size() + 1, ' ');
      line += value;
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

std::string HexDump(absl::string_view data, uint64_t base) {
  std::string out;
  for (size_t line = 0; line < data.size(); line += 16) {
    absl::StrAppendFormat(&out, "%08x ", base + line);
    std::string ascii;
    for (size_t i = 0; i < 16; ++i) {
      if (i == 8) out += ' ';
      if (line + i < data.size()) {
        auto byte = static_cast<unsigned char>(data[line + i]);
        absl::StrAppendFormat(&out, " %02x", byte);
        ascii += absl::ascii_isprint(byte) ? static_cast<char>(byte) : '.';
      } else {
        out += "   ";
      }
    }
    absl::StrAppend(&out, "  |", ascii, "|\n");
  }
  return out;
}

std::string Hex(absl::string_view data) {
  std::string out;
  out.reserve(data.size() * 2);
  for (char c : data) {
    absl::StrAppendFormat(&out, "%02x", static_cast<unsigned char>(c));
  }
  return out;
}

}  // namespace spinnic::spinctl
