#include "bench/cli/format.h"

#include <algorithm>
#include <cstdio>

namespace lb::cli {

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

Table::Table(std::vector<std::string> header, std::vector<bool> left) : left_(std::move(left)) {
  rows_.push_back(std::move(header));
  rows_.emplace_back();
}

void Table::add(std::vector<std::string> row) {
  rows_.push_back(std::move(row));
}
void Table::rule() {
  rows_.emplace_back();
}

std::string Table::str() const {
  std::vector<size_t> width(left_.size(), 0);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  size_t total = 0;
  for (size_t w : width)
    total += w + 2;
  std::string out;
  for (const auto& r : rows_) {
    if (r.empty()) {
      out += std::string(total - 2, '-') + "\n";
      continue;
    }
    std::string line;
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
      const std::string pad(width[i] - r[i].size(), ' ');
      line += left_[i] ? r[i] + pad : pad + r[i];
      line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace lb::cli
