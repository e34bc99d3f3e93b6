#include "engine/read_session.h"

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
  struct CachedColumn {
    std::vector<Cell> cells;
    bool asked = false;       // a Get asked for it
    bool prefetched = false;  // fetched by prediction before any Get asked for it
  };
  using CachedRow = ColumnMap<CachedColumn>;

  // One lookup of `row`: the column asked for and the columns predicted with
  // it that `cached` (the row's cache entry; null when there is none) lacks.
  Result<std::vector<Cell>> Fetch(std::string_view row, const FamilyInfo& family,
                                  std::string_view qualifier, CachedRow* cached);

  const std::shared_ptr<EngineCore> core_;
  const std::shared_ptr<TableState> table_;
  const ReadSessionOptions options_;
  // Taken at the first miss and kept: predicting costs no lock after that.
  std::shared_ptr<const PrefetchPredictor::Snapshot> predictions_;
  std::unordered_map<std::string, CachedRow, StringHash, std::equal_to<>> rows_;
  ReadStats stats_{.sessions = 1};
};

ReadSessionImpl::~ReadSessionImpl() {
  TableReadState& reads = table_->reads;
  std::vector<std::vector<ColumnRef>> learned;
  learned.reserve(rows_.size());
  for (const auto& [row, cached] : rows_) {
    std::vector<ColumnRef> asked;
    for (const auto& [column, entry] : cached) {
      if (entry.asked) asked.emplace_back(column);
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
  const FamilyInfo* f = table_->schema.FindFamily(family);
  if (f == nullptr) {
    return Status::InvalidArgument("table '" + table_->name + "' has no column family '" +
                                   EscapeBytes(family) + "'");
  }
  CachedRow* cached = nullptr;
  if (auto r = rows_.find(row); r != rows_.end()) {
    cached = &r->second;
    if (auto c = cached->find(ColumnRef(f->id, qualifier)); c != cached->end()) {
      CachedColumn& entry = c->second;
      stats_.cache_hits++;
      if (entry.prefetched && !entry.asked) stats_.prefetch_hits++;
      entry.asked = true;
      return entry.cells;
    }
  }
  return Fetch(row, *f, qualifier, cached);
}

Result<std::vector<Cell>> ReadSessionImpl::Fetch(std::string_view row, const FamilyInfo& family,
                                                 std::string_view qualifier, CachedRow* cached) {
  const Schema& schema = table_->schema;
  RowFilter filter;
  filter.min_timestamp = options_.min_timestamp;
  filter.max_timestamp = options_.max_timestamp;
  filter.max_versions = options_.max_versions;
  filter.columns.emplace_back(family.name, qualifier);
  // The ids of filter.columns, in the same order.
  std::vector<ColumnRef> wanted{ColumnRef(family.id, qualifier)};
  if (options_.prefetch) {
    if (predictions_ == nullptr) predictions_ = table_->reads.predictor().snapshot();
    for (const ColumnId& c : predictions_->Predict(wanted[0])) {
      if (cached != nullptr && cached->contains(c)) continue;
      const FamilyInfo* f = schema.FamilyById(c.family);
      if (f == nullptr) continue;
      filter.columns.emplace_back(f->name, c.qualifier);
      wanted.emplace_back(c);
    }
  }
  Result<std::vector<Cell>> cells = core_->ReadRow(*table_, ReadOptions(), row, filter);
  if (!cells.ok()) return cells.status();
  stats_.lookups++;

  if (cached == nullptr) cached = &rows_.try_emplace(std::string(row)).first->second;
  // Every column of the lookup gets an entry, so one with no cells is cached
  // as empty. Entries are nodes: the pointers survive later insertions.
  std::vector<CachedColumn*> entries;
  entries.reserve(wanted.size());
  for (size_t i = 0; i < wanted.size(); i++) {
    CachedColumn* entry =
        &cached->try_emplace(ColumnId{wanted[i].family, std::string(wanted[i].qualifier)})
             .first->second;
    if (i > 0) {
      entry->prefetched = true;
      stats_.prefetched_columns++;
    }
    entries.push_back(entry);
  }
  // Cells come grouped by column; find each column's entry once.
  size_t current = wanted.size();
  const FamilyInfo* current_family = nullptr;
  for (Cell& cell : *cells) {
    if (current == wanted.size() || cell.family != current_family->name ||
        cell.qualifier != wanted[current].qualifier) {
      current_family = schema.FindFamily(cell.family);
      current = 0;
      while (current < wanted.size() &&
             (current_family == nullptr || wanted[current].family != current_family->id ||
              wanted[current].qualifier != cell.qualifier)) {
        current++;
      }
      if (current == wanted.size()) continue;  // not asked for: cannot happen
    }
    CachedColumn* entry = entries[current];
    if (entry->prefetched) stats_.prefetched_cells++;
    entry->cells.push_back(std::move(cell));
  }
  entries[0]->asked = true;
  return entries[0]->cells;
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
  if (Dropped(*table)) return DroppedError(*table);
  return std::unique_ptr<ReadSession>(
      new ReadSessionImpl(std::move(core), std::move(table), options));
}

}  // namespace strata::engine
