#include "launcher/text_table.h"

#include <algorithm>
#include <utility>

namespace ddprun::launcher {

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> right)
    : right_(std::move(right)) {
  rows_.push_back(std::move(header));
}

void TextTable::add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

void TextTable::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      bool last = i + 1 == row.size();
      std::string pad(width[i] - row[i].size(), ' ');
      if (i < right_.size() && right_[i]) {
        line += pad;
        line += row[i];
      } else {
        line += row[i];
        if (!last) line += pad;
      }
      if (!last) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  }
}

}  // namespace ddprun::launcher
