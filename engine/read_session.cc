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
#include "engine/test_hooks.h"

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
      : core_(std::move(core)), table_(std::move(table)), options_(options) {
    filter_.min_timestamp = options_.min_timestamp;
    filter_.max_timestamp = options_.max_timestamp;
    filter_.max_versions = options_.max_versions;
  }

  ~ReadSessionImpl() override;

  Result<std::vector<Cell>> Get(std::string_view row, std::string_view family,
                                std::string_view qualifier) override;
  Result<std::vector<Cell>> ReadRow(std::string_view row, const RowFilter& filter) override;
  ReadStats stats() const override { return stats_; }

 private:
  // A column of a cached row: its versions are the session's cells [begin, end).
  struct CachedColumn {
    ColumnId column;
    const FamilyInfo* family = nullptr;  // in a schema of schemas_
    size_t begin = 0;
    size_t end = 0;
    bool asked = false;       // a Get asked for it
    bool prefetched = false;  // fetched by prediction before any Get asked for it
  };
  struct CachedRow {
    std::vector<CachedColumn> columns;  // sorted by (family, qualifier)

    CachedColumn* Find(ColumnRef c);
  };
  // A column one lookup reads.
  struct Wanted {
    const FamilyInfo* family;
    std::string_view qualifier;  // valid during the lookup
    bool predicted;
  };
  // Keeps the cells one lookup finds, with the filter column of each.
  class LookupSink;

  // One lookup of `row`: the column asked for and the columns predicted with
  // it that `cached` (the row's cache entry; null when there is none) lacks.
  // Reads nothing and sets *stale_schema when `schema` is no longer the
  // table's (EngineCore::ReadRowInto).
  Result<std::vector<Cell>> Fetch(const Schema& schema, std::string_view row,
                                  const FamilyInfo& family, std::string_view qualifier,
                                  CachedRow* cached, bool* stale_schema);
  // The versions of `c`, as Get returns them.
  std::vector<Cell> CellsOf(const CachedColumn& c) const;
  // Stable-sorts the cells from `first` on, which the last lookup added, and
  // found_columns_ by found_columns_.
  void SortLookup(size_t first);
  // Where the value of the session's cell i starts in values_.
  size_t ValueStart(size_t i) const { return i == 0 ? 0 : value_ends_[i - 1]; }

  const std::shared_ptr<EngineCore> core_;
  const std::shared_ptr<TableState> table_;
  const ReadSessionOptions options_;
  // Every schema a lookup read by (one, unless the table was altered
  // meanwhile): CachedColumn::family points into them.
  std::vector<std::shared_ptr<const Schema>> schemas_;
  // Taken at the first miss and kept: predicting costs no lock after that.
  std::shared_ptr<const PrefetchPredictor::Snapshot> predictions_;
  std::unordered_map<std::string, CachedRow, StringHash, std::equal_to<>> rows_;
  // Every cached version of every column ("the session's cells"): cell i
  // has timestamps_[i] and the value values_[ValueStart(i), value_ends_[i]).
  // The cells of a lookup are appended, so a column's versions stay adjacent
  // and a session makes few allocations however many cells it caches.
  // Three arrays, not one array of structs: the compiler merges a struct's
  // stores into legacy-SSE vector stores, which cost about 250 cycles a cell
  // in bench/prefetch_bench on CPUs where the C library's AVX-512 memcpy and
  // memcmp leave the upper vector state dirty; scalar stores do not.
  std::vector<uint64_t> timestamps_;
  std::vector<size_t> value_ends_;
  std::string values_;
  // Reused by every lookup: its columns, its filter (the session's range and
  // versions), and the filter column of each cell it found.
  std::vector<Wanted> wanted_;
  ResolvedFilter filter_;
  std::vector<size_t> found_columns_;
  ReadStats stats_{.sessions = 1};
};

class ReadSessionImpl::LookupSink final : public RowSink {
 public:
  explicit LookupSink(ReadSessionImpl* session) : session_(session) {}

  void Add(const FoundColumn& column, uint64_t timestamp, Slice value) override {
    // The filter names single columns only.
    assert(column.index != FoundColumn::kWholeFamily);
    session_->values_.append(value.data(), value.size());
    session_->value_ends_.push_back(session_->values_.size());
    session_->timestamps_.push_back(timestamp);
    session_->found_columns_.push_back(column.index);
  }

 private:
  ReadSessionImpl* const session_;
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

std::vector<Cell> ReadSessionImpl::CellsOf(const CachedColumn& c) const {
  std::vector<Cell> out(c.end - c.begin);
  for (size_t i = c.begin; i < c.end; i++) {
    Cell& cell = out[i - c.begin];
    cell.family = c.family->name;
    cell.qualifier = c.column.qualifier;
    cell.timestamp = timestamps_[i];
    const size_t start = ValueStart(i);
    cell.value.assign(values_.data() + start, value_ends_[i] - start);
  }
  return out;
}

void ReadSessionImpl::SortLookup(size_t first) {
  const size_t n = found_columns_.size();
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; k++) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return found_columns_[a] < found_columns_[b]; });
  const size_t values_before = ValueStart(first);
  std::string values;
  values.reserve(values_.size() - values_before);
  std::vector<uint64_t> timestamps(n);
  std::vector<size_t> ends(n);
  std::vector<size_t> columns(n);
  for (size_t k = 0; k < n; k++) {
    const size_t i = first + order[k];
    values.append(values_, ValueStart(i), value_ends_[i] - ValueStart(i));
    timestamps[k] = timestamps_[i];
    ends[k] = values_before + values.size();
    columns[k] = found_columns_[order[k]];
  }
  values_.replace(values_before, std::string::npos, values);
  std::copy(timestamps.begin(), timestamps.end(), timestamps_.begin() + first);
  std::copy(ends.begin(), ends.end(), value_ends_.begin() + first);
  found_columns_.swap(columns);
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
  for (;;) {
    // The lookup reads by the schema as it starts; a schema change before
    // the lookup holds the close gate sends it round again.
    const std::shared_ptr<const Schema> schema = table_->schema();
    if (auto hook = test_hooks::after_session_schema.load(std::memory_order_relaxed)) hook();
    const FamilyInfo* f = schema->FindFamily(family);
    if (f == nullptr) {
      return Status::InvalidArgument("table '" + table_->name + "' has no column family '" +
                                     EscapePrefix(family) + "'");
    }
    CachedRow* cached = nullptr;
    if (auto r = rows_.find(row); r != rows_.end()) {
      cached = &r->second;
      if (CachedColumn* c = cached->Find(ColumnRef(f->id, qualifier)); c != nullptr) {
        stats_.cache_hits++;
        if (c->prefetched && !c->asked) stats_.prefetch_hits++;
        c->asked = true;
        return CellsOf(*c);
      }
    }
    // Cached columns point into the schema they were read by: keep it.
    if (schemas_.empty() || schemas_.back() != schema) schemas_.push_back(schema);
    bool stale_schema = false;
    Result<std::vector<Cell>> cells = Fetch(*schema, row, *f, qualifier, cached, &stale_schema);
    if (!stale_schema) return cells;
  }
}

Result<std::vector<Cell>> ReadSessionImpl::Fetch(const Schema& schema, std::string_view row,
                                                 const FamilyInfo& family,
                                                 std::string_view qualifier, CachedRow* cached,
                                                 bool* stale_schema) {
  const std::vector<ColumnId>* predicted = nullptr;
  if (options_.prefetch) {
    if (predictions_ == nullptr) predictions_ = table_->reads.predictor().snapshot();
    predicted = &predictions_->Predict(ColumnRef(family.id, qualifier));
  }
  wanted_.clear();
  wanted_.reserve(1 + (predicted != nullptr ? predicted->size() : 0));
  wanted_.push_back(Wanted{&family, qualifier, /*predicted=*/false});
  if (predicted != nullptr) {
    // The snapshot, which predictions_ keeps, owns the qualifiers.
    for (const ColumnId& c : *predicted) {
      if (cached != nullptr && cached->Find(c) != nullptr) continue;
      const FamilyInfo* f = schema.FamilyById(c.family);
      if (f != nullptr) wanted_.push_back(Wanted{f, c.qualifier, /*predicted=*/true});
    }
  }
  // One filter of single columns: ReadRowInto hands each cell over with the
  // index of its column in the filter's sorted order, which is ReadRow's.
  filter_.ClearColumns();
  size_t qualifier_bytes = 0;
  for (const Wanted& w : wanted_) qualifier_bytes += w.qualifier.size();
  filter_.ReserveColumns(wanted_.size(), qualifier_bytes);
  for (const Wanted& w : wanted_) filter_.AddColumn(w.family->id, w.qualifier);
  filter_.SortColumns();

  const size_t first = timestamps_.size();
  const size_t values_before = values_.size();
  found_columns_.clear();
  if (first == 0) {
    // The session's first lookup: room for a version of each column, so the
    // buffers do not grow cell by cell.
    constexpr size_t kValueBytesGuess = 128;
    timestamps_.reserve(wanted_.size());
    value_ends_.reserve(wanted_.size());
    values_.reserve(wanted_.size() * kValueBytesGuess);
    found_columns_.reserve(wanted_.size());
  }
  LookupSink sink(this);
  Status s = core_->ReadRowInto(*table_, schema, row, filter_, &sink, stale_schema);
  if (!s.ok() || *stale_schema) {
    timestamps_.resize(first);
    value_ends_.resize(first);
    values_.resize(values_before);
    if (!s.ok()) return s;
    return std::vector<Cell>();  // not read: the caller goes round again
  }
  stats_.lookups++;
  // Each locality group's cells come in column order; with several groups,
  // put the lookup's cells in column order (stable: versions stay newest first).
  if (!std::is_sorted(found_columns_.begin(), found_columns_.end())) SortLookup(first);

  if (cached == nullptr) cached = &rows_.try_emplace(std::string(row)).first->second;
  // Every column of the filter gets an entry, so one with no cells is
  // cached as empty. They come in ColumnLess order (the encoded order of
  // (family id, qualifier)), so they merge into the row's sorted columns.
  const size_t old_columns = cached->columns.size();
  cached->columns.reserve(old_columns + filter_.num_columns());
  size_t asked = 0;
  size_t k = 0;  // found_columns_[k] belongs to the session's cell first + k
  for (size_t i = 0; i < filter_.num_columns(); i++) {
    const Wanted& w = wanted_[filter_.column_source(i)];
    CachedColumn c;
    c.column = ColumnId{w.family->id, std::string(w.qualifier)};
    c.family = w.family;
    c.begin = first + k;
    while (k < found_columns_.size() && found_columns_[k] == i) k++;
    c.end = first + k;
    if (w.predicted) {
      c.prefetched = true;
      stats_.prefetched_columns++;
      stats_.prefetched_cells += c.end - c.begin;
    } else {
      c.asked = true;
      asked = cached->columns.size();
    }
    cached->columns.push_back(std::move(c));
  }
  assert(k == found_columns_.size());  // every cell belongs to a column of the filter
  std::vector<Cell> result = CellsOf(cached->columns[asked]);
  if (old_columns > 0) {
    std::inplace_merge(cached->columns.begin(), cached->columns.begin() + old_columns,
                       cached->columns.end(), [](const CachedColumn& a, const CachedColumn& b) {
                         return ColumnLess(a.column, b.column);
                       });
  }
  return result;
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
