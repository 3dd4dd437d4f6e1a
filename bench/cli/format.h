// Text output helpers for the CLI: aligned tables, thousands separators, JSON strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lb::cli {

std::string with_commas(int64_t v);       // 61100840 -> "61,100,840"
std::string fixed(double v, int digits);  // printf("%.*f")
std::string json_string(const std::string& s);

// Columns are left-aligned when `left[i]` is true, else right-aligned (numbers).
class Table {
 public:
  Table(std::vector<std::string> header, std::vector<bool> left);
  void add(std::vector<std::string> row);
  void rule();  // a horizontal line before the next row
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
  std::vector<bool> left_;
};

}  // namespace lb::cli
