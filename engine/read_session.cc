#include "engine/read_session.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/coding.h"
#include "engine/engine_core.h"

namespace strata::engine {

void TableReadState::Add(const ReadStats& s) {
  sessions_.fetch_add(s.sessions, std::memory_order_relaxed);
  gets_.fetch_add(s.gets, std::memory_order_relaxed);
  cache_hits_.fetch_add(s.cache_hits, std::memory_order_relaxed);
  lookups_.fetch_add(s.lookups, std::memory_order_relaxed);
  prefetched_columns_.fetch_add(s.prefetched_columns, std::memory_order_relaxed);
  prefetched_cells_.fetch_add(s.prefetched_cells, std::memory_order_relaxed);
  prefetch_hits_.fetch_add(s.prefetch_hits, std::memory_order_relaxed);
}

ReadStats TableReadState::Totals() const {
  ReadStats s;
  s.sessions = sessions_.load(std::memory_order_relaxed);
  s.gets = gets_.load(std::memory_order_relaxed);
  s.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  s.lookups = lookups_.load(std::memory_order_relaxed);
  s.prefetched_columns = prefetched_columns_.load(std::memory_order_relaxed);
  s.prefetched_cells = prefetched_cells_.load(std::memory_order_relaxed);
  s.prefetch_hits = prefetch_hits_.load(std::memory_order_relaxed);
  return s;
}

namespace {

Status DroppedError(const TableState& table) {
  return Status::NotFound("table '" + table.name + "' was dropped");
}

bool Dropped(const TableState& table) {
  // Relaxed: a flag set once; a Get racing the drop may be answered from the
  // cache, as a Table call racing it may still be served.
  return table.dropped.load(std::memory_order_relaxed);
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

class ReadSessionImpl final : public ReadSession {
 public:
  ReadSessionImpl(std::shared_ptr<EngineCore> core, std::shared_ptr<TableState> table,
                  const ReadSessionOptions& options)
      : core_(std::move(core)), table_(std::move(table)), options_(options) {}

  ~ReadSessionImpl() override;

  Result<std::vector<Cell>> Get(std::string_view row, std::string_view family,
                                std::string_view qualifier) override;
  Result<std::vector<Cell>> ReadRow(std::string_view row, const RowFilter& filter) override;
  ReadStats stats() const override { return stats_; }

 private:
  // A column of a cached row: its cells are cells[begin, end) of one lookup.
  struct CachedColumn {
    ColumnId column;
    uint32_t lookup = 0;
    uint32_t begin = 0;
    uint32_t end = 0;
    bool asked = false;       // a Get asked for it
    bool prefetched = false;  // fetched by prediction before any Get asked for it
  };
  struct CachedRow {
    std::vector<std::vector<Cell>> lookups;  // what each lookup of the row returned
    std::vector<CachedColumn> columns;       // sorted by (family, qualifier)

    CachedColumn* Find(ColumnRef c);
    std::vector<Cell> CellsOf(const CachedColumn& c) const {
      const std::vector<Cell>& cells = lookups[c.lookup];
      return std::vector<Cell>(cells.begin() + c.begin, cells.begin() + c.end);
    }
  };

  // One lookup of `row`: the column asked for and the columns predicted with
  // it that `cached` (the row's cache entry; null when there is none) lacks.
  Result<std::vector<Cell>> Fetch(const Schema& schema, std::string_view row,
                                  const FamilyInfo& family, std::string_view qualifier,
                                  CachedRow* cached);

  const std::shared_ptr<EngineCore> core_;
  const std::shared_ptr<TableState> table_;
  const ReadSessionOptions options_;
  // Taken at the first miss and kept: predicting costs no lock after that.
  std::shared_ptr<const PrefetchPredictor::Snapshot> predictions_;
  std::unordered_map<std::string, CachedRow, StringHash, std::equal_to<>> rows_;
  ReadStats stats_{.sessions = 1};
};

// The order of ReadRow's cells: family id (schema order), then qualifier.
bool ColumnLess(ColumnRef a, ColumnRef b) {
  return a.family != b.family ? a.family < b.family : a.qualifier < b.qualifier;
}

ReadSessionImpl::CachedColumn* ReadSessionImpl::CachedRow::Find(ColumnRef c) {
  auto it = std::lower_bound(
      columns.begin(), columns.end(), c,
      [](const CachedColumn& x, ColumnRef y) { return ColumnLess(x.column, y); });
  if (it == columns.end() || ColumnLess(c, it->column)) return nullptr;
  return &*it;
}

ReadSessionImpl::~ReadSessionImpl() {
  TableReadState& reads = table_->reads;
  std::vector<std::vector<ColumnRef>> learned;
  learned.reserve(rows_.size());
  for (const auto& [row, cached] : rows_) {
    std::vector<ColumnRef> asked;
    for (const CachedColumn& c : cached.columns) {
      if (c.asked) asked.emplace_back(c.column);
    }
    if (!asked.empty()) learned.push_back(std::move(asked));
  }
  // False when another session was teaching the predictor: this sample is
  // left out rather than waited for.
  reads.predictor().Record(learned);
  reads.Add(stats_);
}

Result<std::vector<Cell>> ReadSessionImpl::Get(std::string_view row, std::string_view family,
                                               std::string_view qualifier) {
  stats_.gets++;
  if (Dropped(*table_)) return DroppedError(*table_);
  // The schema as this Get starts: its lookup reads by it, even if the
  // schema changes meanwhile (EngineCore::ReadRow).
  const std::shared_ptr<const Schema> schema = table_->schema();
  const FamilyInfo* f = schema->FindFamily(family);
  if (f == nullptr) {
    return Status::InvalidArgument("table '" + table_->name + "' has no column family '" +
                                   EscapeBytes(family) + "'");
  }
  CachedRow* cached = nullptr;
  if (auto r = rows_.find(row); r != rows_.end()) {
    cached = &r->second;
    if (CachedColumn* c = cached->Find(ColumnRef(f->id, qualifier)); c != nullptr) {
      stats_.cache_hits++;
      if (c->prefetched && !c->asked) stats_.prefetch_hits++;
      c->asked = true;
      return cached->CellsOf(*c);
    }
  }
  return Fetch(*schema, row, *f, qualifier, cached);
}

Result<std::vector<Cell>> ReadSessionImpl::Fetch(const Schema& schema, std::string_view row,
                                                 const FamilyInfo& family,
                                                 std::string_view qualifier, CachedRow* cached) {
  struct Wanted {
    const FamilyInfo* family;
    std::string_view qualifier;
    bool predicted;
  };
  std::vector<Wanted> wanted;
  const std::vector<ColumnId>* predicted = nullptr;
  if (options_.prefetch) {
    if (predictions_ == nullptr) predictions_ = table_->reads.predictor().snapshot();
    predicted = &predictions_->Predict(ColumnRef(family.id, qualifier));
  }
  wanted.reserve(1 + (predicted != nullptr ? predicted->size() : 0));
  wanted.push_back(Wanted{&family, qualifier, false});
  if (predicted != nullptr) {
    for (const ColumnId& c : *predicted) {
      if (cached != nullptr && cached->Find(c) != nullptr) continue;
      const FamilyInfo* f = schema.FamilyById(c.family);
      if (f != nullptr) wanted.push_back(Wanted{f, c.qualifier, true});
    }
  }
  RowFilter filter;
  filter.min_timestamp = options_.min_timestamp;
  filter.max_timestamp = options_.max_timestamp;
  filter.max_versions = options_.max_versions;
  filter.columns.reserve(wanted.size());
  for (const Wanted& w : wanted) filter.columns.emplace_back(w.family->name, w.qualifier);
  Result<std::vector<Cell>> cells =
      core_->ReadRow(*table_, ReadOptions(), row, filter, &schema);
  if (!cells.ok()) return cells.status();
  stats_.lookups++;

  if (cached == nullptr) cached = &rows_.try_emplace(std::string(row)).first->second;
  // ReadRow returns the cells grouped by column in ColumnLess order: walk the
  // wanted columns in that order and give each its run of cells. Every
  // wanted column gets an entry, so one with no cells is cached as empty.
  std::sort(wanted.begin(), wanted.end(), [](const Wanted& a, const Wanted& b) {
    return ColumnLess(ColumnRef(a.family->id, a.qualifier), ColumnRef(b.family->id, b.qualifier));
  });
  const uint32_t lookup = static_cast<uint32_t>(cached->lookups.size());
  const size_t old_columns = cached->columns.size();
  if (old_columns == 0) cached->columns.reserve(wanted.size());
  CachedColumn asked;
  uint32_t pos = 0;
  for (const Wanted& w : wanted) {
    CachedColumn c;
    c.column = ColumnId{w.family->id, std::string(w.qualifier)};
    c.lookup = lookup;
    c.begin = pos;
    while (pos < cells->size() && (*cells)[pos].family == w.family->name &&
           (*cells)[pos].qualifier == w.qualifier) {
      pos++;
    }
    c.end = pos;
    if (w.predicted) {
      c.prefetched = true;
      stats_.prefetched_columns++;
      stats_.prefetched_cells += c.end - c.begin;
    } else {
      c.asked = true;
      asked = c;
    }
    cached->columns.push_back(std::move(c));
  }
  assert(pos == cells->size());  // ReadRow returns only what the filter names
  std::inplace_merge(cached->columns.begin(), cached->columns.begin() + old_columns,
                     cached->columns.end(), [](const CachedColumn& a, const CachedColumn& b) {
                       return ColumnLess(a.column, b.column);
                     });
  cached->lookups.push_back(std::move(*cells));
  return cached->CellsOf(asked);
}

Result<std::vector<Cell>> ReadSessionImpl::ReadRow(std::string_view row, const RowFilter& filter) {
  Result<std::vector<Cell>> cells = core_->ReadRow(*table_, ReadOptions(), row, filter);
  if (cells.ok()) stats_.lookups++;
  return cells;
}

}  // namespace

Result<std::unique_ptr<ReadSession>> NewReadSession(std::shared_ptr<EngineCore> core,
                                                    std::shared_ptr<TableState> table,
                                                    const ReadSessionOptions& options) {
  if (options.min_timestamp > options.max_timestamp) {
    return Status::InvalidArgument("read session's min_timestamp is above its max_timestamp");
  }
  if (options.max_versions == 0) {
    return Status::InvalidArgument("read session's max_versions is 0");
  }
  STRATA_RETURN_IF_ERROR(core->CheckUsable(*table));
  return std::unique_ptr<ReadSession>(
      new ReadSessionImpl(std::move(core), std::move(table), options));
}

}  // namespace strata::engine
