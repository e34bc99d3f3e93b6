#include "util/model_row_store.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/mutex.h"
#include "engine/copied_rows.h"

namespace strata::test {

namespace {

// A column of a row: the family's index in the store's order, the qualifier.
using ColumnKey = std::pair<size_t, std::string>;
// A column's visible versions, newest first.
using Versions = std::map<uint64_t, std::string, std::greater<uint64_t>>;
// A row's columns in the order cells come back in.
using RowCells = std::map<ColumnKey, Versions>;

// A RowFilter with family names turned into indexes.
struct Filter {
  bool all_columns = true;
  std::set<size_t> families;
  std::set<ColumnKey> columns;
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  uint32_t max_versions = UINT32_MAX;

  bool Wants(const ColumnKey& c) const {
    return all_columns || families.count(c.first) != 0 || columns.count(c) != 0;
  }
};

bool ValidTimestamp(uint64_t ts) { return ts >= kMinTimestamp && ts <= kMaxTimestamp; }

std::string TooBig(std::string_view what, size_t size, size_t limit) {
  return std::string(what) + " is " + std::to_string(size) + " bytes; the limit is " +
         std::to_string(limit);
}

}  // namespace

// The schema, the limits and the rows. The schema and limits never change,
// so input checks need no lock.
class ModelRowStore::State {
 public:
  State(std::vector<std::string> families, const Limits& limits)
      : families_(std::move(families)), limits_(limits) {
    for (size_t i = 0; i < families_.size(); i++) family_index_[families_[i]] = i;
  }

  const Limits& limits() const { return limits_; }

  // The index of `family`, or InvalidArgument.
  Result<size_t> FamilyIndex(std::string_view family) const {
    auto it = family_index_.find(std::string(family));
    if (it == family_index_.end()) {
      return Status::InvalidArgument("the store has no column family '" + std::string(family) +
                                     "'");
    }
    return it->second;
  }

  Status CheckRowKey(std::string_view row) const {
    if (row.empty()) return Status::InvalidArgument("row key is empty");
    if (row.size() > limits_.max_row_key_size) {
      return Status::InvalidArgument(TooBig("row key", row.size(), limits_.max_row_key_size));
    }
    return Status::OK();
  }

  Status CheckMutation(std::string_view row, const RowMutation& mutation) const {
    STRATA_RETURN_IF_ERROR(CheckRowKey(row));
    if (mutation.empty()) return Status::InvalidArgument("mutation has no entries");
    for (const RowMutation::Entry& e : mutation.entries()) {
      if (!ValidTimestamp(e.timestamp)) {
        return Status::InvalidArgument("timestamp " + std::to_string(e.timestamp) +
                                       " is reserved; use 1 to 2^64-2");
      }
      if (e.kind == RowMutation::Kind::kDeleteRow) continue;
      STRATA_RETURN_IF_ERROR(FamilyIndex(e.family).status());
      if (e.qualifier.size() > limits_.max_qualifier_size) {
        return Status::InvalidArgument(
            TooBig("qualifier", e.qualifier.size(), limits_.max_qualifier_size));
      }
      if (e.value.size() > limits_.max_value_size) {
        return Status::InvalidArgument(TooBig("value", e.value.size(), limits_.max_value_size));
      }
      if (e.kind != RowMutation::Kind::kPut && !e.value.empty()) {
        return Status::InvalidArgument("a delete carries no value");
      }
    }
    return Status::OK();
  }

  Status CheckConditions(const std::vector<Condition>& conditions) const {
    for (size_t i = 0; i < conditions.size(); i++) {
      const Condition& c = conditions[i];
      Status s = FamilyIndex(c.family()).status();
      if (s.ok() && c.qualifier().size() > limits_.max_qualifier_size) {
        s = Status::InvalidArgument(
            TooBig("qualifier", c.qualifier().size(), limits_.max_qualifier_size));
      }
      if (s.ok() && c.value().size() > limits_.max_value_size) {
        s = Status::InvalidArgument(TooBig("value", c.value().size(), limits_.max_value_size));
      }
      if (s.ok() && (!ValidTimestamp(c.min_timestamp()) || !ValidTimestamp(c.max_timestamp()))) {
        s = Status::InvalidArgument("a timestamp is reserved; use 1 to 2^64-2");
      }
      if (s.ok() && c.min_timestamp() > c.max_timestamp()) {
        s = Status::InvalidArgument("min_timestamp " + std::to_string(c.min_timestamp()) +
                                    " is above max_timestamp " + std::to_string(c.max_timestamp()));
      }
      if (s.ok() && c.kind() != Condition::Kind::kValueEquals && !c.value().empty()) {
        s = Status::InvalidArgument("only a value-equals condition carries a value");
      }
      if (!s.ok()) return s.WithContext("condition " + std::to_string(i));
    }
    return Status::OK();
  }

  // One row of a check-and-mutate, as input.
  Status CheckConditional(std::string_view row, const std::vector<Condition>& conditions,
                          const RowMutation& mutation) const {
    if (conditions.empty() && mutation.empty()) {
      return Status::InvalidArgument("no conditions and an empty mutation");
    }
    STRATA_RETURN_IF_ERROR(mutation.empty() ? CheckRowKey(row) : CheckMutation(row, mutation));
    return CheckConditions(conditions);
  }

  Result<Filter> Resolve(const RowFilter& f) const {
    if (f.min_timestamp > f.max_timestamp) {
      return Status::InvalidArgument("filter's min_timestamp is above its max_timestamp");
    }
    if (f.max_versions == 0) return Status::InvalidArgument("filter's max_versions is 0");
    Filter r;
    r.min_timestamp = f.min_timestamp;
    r.max_timestamp = f.max_timestamp;
    r.max_versions = f.max_versions;
    r.all_columns = f.families.empty() && f.columns.empty();
    for (const std::string& family : f.families) {
      Result<size_t> i = FamilyIndex(family);
      if (!i.ok()) return i.status();
      r.families.insert(*i);
    }
    for (const auto& [family, qualifier] : f.columns) {
      Result<size_t> i = FamilyIndex(family);
      if (!i.ok()) return i.status();
      r.columns.insert({*i, qualifier});
    }
    return r;
  }

  // ReadRow: checks, then reads under the lock.
  Result<std::vector<Cell>> ReadRow(std::string_view row, const RowFilter& filter) const
      LOCKS_EXCLUDED(mu_) {
    STRATA_RETURN_IF_ERROR(CheckRowKey(row));
    Result<Filter> f = Resolve(filter);
    if (!f.ok()) return f.status();
    MutexLock l(&mu_);
    return Read(row, *f);
  }

  Result<std::vector<std::pair<std::string, std::vector<Cell>>>> Scan(const ScanSpec& spec) const
      LOCKS_EXCLUDED(mu_) {
    if (!spec.end_row.empty() && spec.start_row > spec.end_row) {
      return Status::InvalidArgument("scan's start_row is after its end_row");
    }
    Result<Filter> f = Resolve(spec.filter);
    if (!f.ok()) return f.status();
    std::vector<std::pair<std::string, std::vector<Cell>>> out;
    MutexLock l(&mu_);
    for (auto it = rows_.lower_bound(spec.start_row);
         it != rows_.end() && (spec.end_row.empty() || it->first < spec.end_row); ++it) {
      std::vector<Cell> cells = Read(it->first, *f);
      if (!cells.empty()) out.emplace_back(it->first, std::move(cells));
    }
    return out;
  }

  // Applies `mutation`, which passed CheckMutation.
  void Apply(std::string_view row, const RowMutation& mutation) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto r = rows_.find(row);
    if (r == rows_.end()) r = rows_.emplace(std::string(row), RowCells()).first;
    RowCells& cells = r->second;
    for (const RowMutation::Entry& e : mutation.entries()) {
      switch (e.kind) {
        case RowMutation::Kind::kPut:
          cells[ColumnKey(*FamilyIndex(e.family), e.qualifier)][e.timestamp] = e.value;
          break;
        case RowMutation::Kind::kDeleteCell: {
          auto c = cells.find(ColumnKey(*FamilyIndex(e.family), e.qualifier));
          if (c != cells.end()) c->second.erase(e.timestamp);
          break;
        }
        case RowMutation::Kind::kDeleteColumn: {
          auto c = cells.find(ColumnKey(*FamilyIndex(e.family), e.qualifier));
          if (c != cells.end()) EraseUpTo(&c->second, e.timestamp);
          break;
        }
        case RowMutation::Kind::kDeleteRow:
          for (auto& [column, versions] : cells) EraseUpTo(&versions, e.timestamp);
          break;
      }
    }
    std::erase_if(cells, [](const auto& c) { return c.second.empty(); });
    if (cells.empty()) rows_.erase(r);
  }

  // Evaluates `conditions` (which passed CheckConditions) against the row.
  CheckAndMutateResult Evaluate(std::string_view row,
                                const std::vector<Condition>& conditions) const
      EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CheckAndMutateResult result;
    auto r = rows_.find(row);
    for (size_t i = 0; i < conditions.size(); i++) {
      const Condition& c = conditions[i];
      const Versions* versions = nullptr;  // the column's, if it has any
      if (r != rows_.end()) {
        auto col = r->second.find(ColumnKey(*FamilyIndex(c.family()), c.qualifier()));
        if (col != r->second.end()) versions = &col->second;
      }
      auto cell = [&](uint64_t ts, const std::string& value) {
        return Cell{c.family(), c.qualifier(), ts, value};
      };
      ConditionFailure failure{.index = i};
      bool holds = true;
      switch (c.kind()) {
        case Condition::Kind::kNoCellInRange:
          if (versions != nullptr) {
            for (auto v = versions->lower_bound(c.max_timestamp());
                 v != versions->end() && v->first >= c.min_timestamp(); ++v) {
              failure.cells.push_back(cell(v->first, v->second));
            }
          }
          holds = failure.cells.empty();
          break;
        case Condition::Kind::kCellExists:
          holds = versions != nullptr && versions->count(c.min_timestamp()) != 0;
          break;
        case Condition::Kind::kValueEquals: {
          if (versions == nullptr) {
            holds = false;
            break;
          }
          auto v = versions->find(c.min_timestamp());
          if (v == versions->end()) {
            holds = false;
          } else if (v->second != c.value()) {
            holds = false;
            failure.cells.push_back(cell(v->first, v->second));
          }
          break;
        }
      }
      if (!holds) result.failures.push_back(std::move(failure));
    }
    result.applied = result.failures.empty();
    return result;
  }

  std::vector<std::pair<std::string, std::vector<Cell>>> Dump() const LOCKS_EXCLUDED(mu_) {
    std::vector<std::pair<std::string, std::vector<Cell>>> out;
    MutexLock l(&mu_);
    for (const auto& [row, cells] : rows_) out.emplace_back(row, Read(row, Filter()));
    return out;
  }

  mutable Mutex mu_;

 private:
  // Erases the versions at or below `ts`.
  static void EraseUpTo(Versions* versions, uint64_t ts) {
    versions->erase(versions->lower_bound(ts), versions->end());
  }

  std::vector<Cell> Read(std::string_view row, const Filter& f) const
      EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<Cell> out;
    auto r = rows_.find(row);
    if (r == rows_.end()) return out;
    for (const auto& [column, versions] : r->second) {
      if (!f.Wants(column)) continue;
      uint32_t n = 0;
      for (auto v = versions.lower_bound(f.max_timestamp);
           v != versions.end() && v->first >= f.min_timestamp && n < f.max_versions; ++v, ++n) {
        out.push_back(Cell{families_[column.first], column.second, v->first, v->second});
      }
    }
    return out;
  }

  const std::vector<std::string> families_;
  std::map<std::string, size_t> family_index_;
  const Limits limits_;
  std::map<std::string, RowCells, std::less<>> rows_ GUARDED_BY(mu_);
};

ModelRowStore::ModelRowStore(std::vector<std::string> families)
    : ModelRowStore(std::move(families), Limits()) {}

ModelRowStore::ModelRowStore(std::vector<std::string> families, const Limits& limits)
    : state_(std::make_shared<State>(std::move(families), limits)) {}

std::unique_ptr<ModelRowStore> ModelRowStore::ForSchema(const TableSchema& schema,
                                                        const EngineOptions& options) {
  std::vector<std::string> families;
  for (const ColumnFamilyOptions& f : schema.families) families.push_back(f.name);
  Limits limits;
  limits.max_row_key_size = options.max_row_key_size;
  limits.max_qualifier_size = options.max_qualifier_size;
  limits.max_value_size = options.max_value_size;
  return std::make_unique<ModelRowStore>(std::move(families), limits);
}

ModelRowStore::~ModelRowStore() = default;

RowStoreLimits ModelRowStore::GetLimits() const { return state_->limits(); }

Result<std::vector<Cell>> ModelRowStore::ReadRow(const ReadOptions& options, std::string_view row,
                                                 const RowFilter& filter) const {
  return state_->ReadRow(row, filter);
}

Status ModelRowStore::Mutate(const WriteOptions& options, std::string_view row,
                             const RowMutation& mutation) {
  STRATA_RETURN_IF_ERROR(state_->CheckMutation(row, mutation));
  MutexLock l(&state_->mu_);
  state_->Apply(row, mutation);
  return Status::OK();
}

Result<CheckAndMutateResult> ModelRowStore::CheckAndMutate(const WriteOptions& options,
                                                           std::string_view row,
                                                           const std::vector<Condition>& conditions,
                                                           const RowMutation& mutation) {
  STRATA_RETURN_IF_ERROR(state_->CheckConditional(row, conditions, mutation));
  MutexLock l(&state_->mu_);
  CheckAndMutateResult result = state_->Evaluate(row, conditions);
  if (result.applied && !mutation.empty()) state_->Apply(row, mutation);
  return result;
}

Result<std::vector<CheckAndMutateResult>> ModelRowStore::CheckAndMutateBatch(
    const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
  return Batch(batch, /*all_or_nothing=*/false);
}

Result<std::vector<CheckAndMutateResult>> ModelRowStore::CheckAndMutateAll(
    const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
  return Batch(batch, /*all_or_nothing=*/true);
}

Result<std::vector<CheckAndMutateResult>> ModelRowStore::Batch(
    const std::vector<ConditionalMutation>& batch, bool all_or_nothing) {
  std::set<std::string_view> rows;
  for (size_t i = 0; i < batch.size(); i++) {
    const ConditionalMutation& m = batch[i];
    Status s = state_->CheckConditional(m.row, m.conditions, m.mutation);
    if (!s.ok()) return s.WithContext("batch entry " + std::to_string(i));
  }
  for (size_t i = 0; i < batch.size(); i++) {
    if (!rows.insert(batch[i].row).second) {
      return Status::InvalidArgument("batch entry " + std::to_string(i) + ": row '" + batch[i].row +
                                     "' is in an earlier entry");
    }
  }
  std::vector<CheckAndMutateResult> results;
  MutexLock l(&state_->mu_);
  for (const ConditionalMutation& m : batch) {
    results.push_back(state_->Evaluate(m.row, m.conditions));
  }
  if (all_or_nothing && std::any_of(results.begin(), results.end(),
                                    [](const CheckAndMutateResult& r) { return !r.applied; })) {
    for (CheckAndMutateResult& r : results) r.applied = false;
  }
  for (size_t i = 0; i < batch.size(); i++) {
    if (results[i].applied && !batch[i].mutation.empty()) {
      state_->Apply(batch[i].row, batch[i].mutation);
    }
  }
  return results;
}

Result<std::unique_ptr<RowIterator>> ModelRowStore::Scan(const ReadOptions& options,
                                                         const ScanSpec& spec) const {
  auto rows = state_->Scan(spec);
  if (!rows.ok()) return rows.status();
  return std::unique_ptr<RowIterator>(new engine::CopiedRowIterator(std::move(rows.value())));
}

Result<std::unique_ptr<ReadSession>> ModelRowStore::NewReadSession(
    const ReadSessionOptions& options) const {
  STRATA_RETURN_IF_ERROR(engine::CheckReadSessionOptions(options));
  std::shared_ptr<const State> state = state_;
  return std::unique_ptr<ReadSession>(new engine::ColumnCacheSession(
      [state](std::string_view row, const RowFilter& filter) {
        return state->ReadRow(row, filter);
      },
      options));
}

std::vector<std::pair<std::string, std::vector<Cell>>> ModelRowStore::Dump() const {
  return state_->Dump();
}

}  // namespace strata::test
