// Pieces for row stores whose reads are copies taken at once (the RADOS
// store, the test model):
//  * CopiedRowIterator, a RowIterator over rows copied when the scan ran,
//    in row order;
//  * ColumnCacheSession, a ReadSession whose Get reads the one column asked
//    for through a ReadRow function (no prediction) and caches it for the
//    rest of the session, and whose ReadRow reads through;
//  * CheckReadSessionOptions, the input check of NewReadSession.
//
// Thread-compatible, as RowIterator and ReadSession are.
#ifndef STRATA_ENGINE_COPIED_ROWS_H_
#define STRATA_ENGINE_COPIED_ROWS_H_

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "strata/iterator.h"
#include "strata/options.h"
#include "strata/read_session.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

class CopiedRowIterator final : public RowIterator {
 public:
  using Rows = std::vector<std::pair<std::string, std::vector<Cell>>>;
  // REQUIRES: `rows` in row order, none without cells.
  explicit CopiedRowIterator(Rows rows) : rows_(std::move(rows)) { Publish(); }

  bool Valid() const override { return pos_ < rows_.size(); }
  void Next() override {
    pos_++;
    Publish();
  }
  void Prev() override {
    pos_ = pos_ == 0 ? rows_.size() : pos_ - 1;
    Publish();
  }
  void Seek(std::string_view row) override {
    pos_ = static_cast<size_t>(
        std::lower_bound(rows_.begin(), rows_.end(), row,
                         [](const auto& r, std::string_view target) { return r.first < target; }) -
        rows_.begin());
    Publish();
  }
  std::string_view row() const override { return rows_[pos_].first; }
  const std::vector<CellView>& cell_views() const override { return views_; }
  const std::vector<Cell>& cells() const override { return rows_[pos_].second; }
  Status status() const override { return Status::OK(); }

 private:
  void Publish() {
    views_.clear();
    if (pos_ >= rows_.size()) return;
    for (const Cell& c : rows_[pos_].second) {
      views_.push_back(CellView{c.family, c.qualifier, c.timestamp, c.value});
    }
  }

  const Rows rows_;
  size_t pos_ = 0;
  std::vector<CellView> views_;
};

class ColumnCacheSession final : public ReadSession {
 public:
  // The store's ReadRow: keeps what it needs alive.
  using ReadRowFn = std::function<Result<std::vector<Cell>>(std::string_view, const RowFilter&)>;

  ColumnCacheSession(ReadRowFn read_row, const ReadSessionOptions& options)
      : read_row_(std::move(read_row)), options_(options) {}

  Result<std::vector<Cell>> Get(std::string_view row, std::string_view family,
                                std::string_view qualifier) override {
    stats_.gets++;
    auto key = std::make_tuple(std::string(row), std::string(family), std::string(qualifier));
    if (auto it = cache_.find(key); it != cache_.end()) {
      stats_.cache_hits++;
      return it->second;
    }
    RowFilter filter;
    filter.columns = {{std::string(family), std::string(qualifier)}};
    filter.min_timestamp = options_.min_timestamp;
    filter.max_timestamp = options_.max_timestamp;
    filter.max_versions = options_.max_versions;
    Result<std::vector<Cell>> cells = read_row_(row, filter);
    if (!cells.ok()) return cells.status();
    stats_.lookups++;
    cache_.emplace(std::move(key), *cells);
    return cells;
  }

  Result<std::vector<Cell>> ReadRow(std::string_view row, const RowFilter& filter) override {
    Result<std::vector<Cell>> cells = read_row_(row, filter);
    if (cells.ok()) stats_.lookups++;
    return cells;
  }

  ReadStats stats() const override { return stats_; }

 private:
  const ReadRowFn read_row_;
  const ReadSessionOptions options_;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<Cell>> cache_;
  ReadStats stats_{.sessions = 1};
};

inline Status CheckReadSessionOptions(const ReadSessionOptions& options) {
  if (options.min_timestamp > options.max_timestamp) {
    return Status::InvalidArgument("read session's min_timestamp is above its max_timestamp");
  }
  if (options.max_versions == 0) return Status::InvalidArgument("read session's max_versions is 0");
  return Status::OK();
}

}  // namespace strata::engine

#endif  // STRATA_ENGINE_COPIED_ROWS_H_
