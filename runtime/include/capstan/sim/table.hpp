// capstan::sim::RowTable: the column table (columns.hpp) kept in memory,
// numbers at full precision, for a caller in the same process (the model
// library's capstan_model_simulate, library.hpp; Python's
// Model.simulate). It takes rows as RowWriter (csv.hpp) does, so that
// capstan::sim::simulate writes either:
//
//   capstan::sim::RowTable table;
//   capstan::sim::simulate(model, request, table);
//   table.names()        // "time", "joint.q", ... (columns.hpp's names)
//   table.values()       // rows() x names().size(), row-major
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace capstan::sim {

class RowTable {
 public:
  // A header cell (before the first endRow(false)).
  void text(std::string_view s) { names_.emplace_back(s); }
  void number(double v) { values_.push_back(v); }
  // Ends the row (`data`: a data row; else the header).
  void endRow(bool data = true) {
    if (data) ++rows_;
  }
  // Memory does not fail part way through a row (an allocation failure
  // throws): every row ended is kept.
  bool flush() { return true; }
  long rowsWritten() const { return rows_; }
  bool failed() const { return false; }
  std::string error() const { return {}; }

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<double>& values() const { return values_; }  // row-major
  long rows() const { return rows_; }
  void clear() {
    names_.clear();
    values_.clear();
    rows_ = 0;
  }

 private:
  std::vector<std::string> names_;
  std::vector<double> values_;
  long rows_ = 0;
};

}  // namespace capstan::sim
