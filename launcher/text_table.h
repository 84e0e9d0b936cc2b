#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ddprun::launcher {

/// Rows printed in aligned columns, two spaces apart: text left, numbers right.
class TextTable {
 public:
  /// `right[i]`: column i is right-aligned (missing entries: left).
  explicit TextTable(std::vector<std::string> header, std::vector<bool> right = {});
  void add(std::vector<std::string> row);
  /// Every row, each starting with `indent`; the last column is not padded.
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::vector<std::string>> rows_;  // the header first
  std::vector<bool> right_;
};

}  // namespace ddprun::launcher
