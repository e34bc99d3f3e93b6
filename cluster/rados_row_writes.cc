// RadosWriteRows (rados_row_store.h): Mutate, CheckAndMutate and their
// batches as compound RADOS operations, every row of a batch in flight at
// once, round after round.
//
// A row goes one of two ways (cluster/README.md has the costs):
//  * blind: when every condition is a compare of one omap key (CellExists,
//    ValueEquals, NoCellInRange of one timestamp) or, where the OSDs run
//    cls_lua, a NoCellInRange over a range (checked by kRangeScript within
//    the write), and every entry a set or a remove of keys or of a key range
//    (all but a DeleteRow below the maximum timestamp), one write carries
//    the compares, the changes and a new row version. -ECANCELED means a
//    compare failed: the row goes the other way, which finds out which ones.
//  * read, then write: one read of the row's keys (its version key among
//    them), the conditions evaluated and the mutation applied here, then one
//    write of the difference guarded by a compare of the version key, so it
//    applies only if no write of the row came in between. -ECANCELED: read
//    again.
#include <cerrno>

#include "cluster/rados_keys.h"
#include "cluster/rados_row_store.h"
#include "engine/conditions.h"

namespace strata::cluster {
namespace {

using rados_keys::CellKey;
using rados_keys::ColumnPrefix;
using rados_keys::RowPrefix;

// A NoCellInRange over more than one timestamp: no omap compare says it.
bool IsRange(const Condition& c) {
  return c.kind() == Condition::Kind::kNoCellInRange && c.min_timestamp() != c.max_timestamp();
}

// `server`: the OSDs run the range checks (kRangeScript) within the write.
bool CanGoBlind(const RowWrite& w, bool server) {
  if (w.mutation->empty()) return false;  // a pure check writes nothing: it reads
  for (const Condition& c : *w.conditions) {
    if (IsRange(c) && !server) return false;
  }
  for (const RowMutation::Entry& e : w.mutation->entries()) {
    if (e.kind == RowMutation::Kind::kDeleteRow && e.timestamp != kMaxTimestamp) return false;
  }
  return true;
}

// Run by the OSD (cls_lua's eval_bufferlist) within a blind write: fails it
// with -ECANCELED when a column has a version in a range. Input: per range
// two fields, each a 4-byte little-endian length and its bytes: the key the
// range's versions come after, and the range's last key; every key between
// them is of the column. Only keys are read (map_get_keys: no value is
// copied), and compared byte by byte (Lua's string < follows the locale).
// Keys hold no NUL, as Lua's C API here needs.
constexpr char kRangeScript[] = R"lua(
local function field(s, pos)
  local b1, b2, b3, b4 = string.byte(s, pos, pos + 3)
  local n = b1 + b2 * 256 + b3 * 65536 + b4 * 16777216
  return string.sub(s, pos + 4, pos + 3 + n), pos + 4 + n
end
local function le(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end
function strata_ranges_empty(input, output)
  local s = input:str()
  local pos = 1
  while pos <= #s do
    local after, last
    after, pos = field(s, pos)
    last, pos = field(s, pos)
    for key, _ in pairs(objclass.map_get_keys(after, 1)) do
      if le(key, last) then return -125 end
    end
  end
  return 0
end
objclass.register(strata_ranges_empty)
)lua";

void PutField(std::string* out, std::string_view bytes) {
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  for (int i = 0; i < 4; i++) out->push_back(static_cast<char>(n >> (8 * i)));
  out->append(bytes);
}

// cls_lua's eval_bufferlist input: Ceph's encoding of (script, handler,
// input), version 1, compatible with 1.
std::string LuaEval(std::string_view script, std::string_view handler, std::string_view input) {
  std::string payload;
  PutField(&payload, script);
  PutField(&payload, handler);
  PutField(&payload, input);
  std::string out = {'\x01', '\x01'};
  PutField(&out, payload);
  return out;
}

std::string Tagged(std::string_view value) {
  std::string v(1, rados_keys::kCellTag);
  v.append(value);
  return v;
}

class RowJob {
 public:
  RowJob(RadosStoreState* state, const RowWrite& w)
      : state_(state),
        w_(w),
        tablet_(state->TabletFor(w.row)),
        read_(w.row, {KeyRange{RowPrefix(w.row), "", kOmapPage, false}}),
        phase_(CanGoBlind(
                   w, state->options().server_side_conditions && state->rados().server_conditions())
                   ? Phase::kBlind
                   : Phase::kRead) {}

  bool done() const { return phase_ == Phase::kDone; }
  // The tablet the row was last written or read in.
  const RadosTablet& tablet() const { return tablet_; }
  const Status& status() const { return status_; }
  CheckAndMutateResult& result() { return result_; }

  void Launch() {
    call_ = std::make_unique<RadosCall>();
    if (phase_ == Phase::kRead) {
      read_op_ = std::make_unique<RadosReadOp>();
      read_.Build(tablet_, read_op_.get());
      call_->Start(state_->rados(), tablet_.object, read_op_.get());
      return;
    }
    if (phase_ == Phase::kBlind) BuildBlind();
    call_->Start(state_->rados(), tablet_.object, write_op_.get());
  }

  // Takes the result of the launched operation and decides the next step.
  void Advance() {
    const int rc = call_->Wait();
    switch (phase_) {
      case Phase::kBlind:
      case Phase::kWrite:
        if (rc == 0) return Finish(true);
        if (phase_ == Phase::kBlind && ran_script_ && (rc == -EOPNOTSUPP || rc == -EPERM)) {
          // The OSDs do not load cls_lua, or do not let this user call it:
          // ranges are checked by reading, from now on.
          state_->rados().DisableServerConditions();
          read_.Reset();
          phase_ = Phase::kRead;
          return;
        }
        if (rc == -ECANCELED || rc == -ENOENT) {
          // A compare failed (a condition, the row's version or the epoch),
          // or a split removed the object: read the row and look.
          read_.Reset();
          phase_ = Phase::kRead;
          return;
        }
        return Fail(RadosError(rc, "writing tablet object " + tablet_.object));
      case Phase::kRead:
        return AfterRead(rc);
      case Phase::kDone:
        return;
    }
  }

  void Fail(Status s) {
    status_ = std::move(s);
    phase_ = Phase::kDone;
  }

 private:
  enum class Phase { kBlind, kRead, kWrite, kDone };

  void Finish(bool applied) {
    result_.applied = applied;
    if (applied) result_.failures.clear();
    phase_ = Phase::kDone;
  }

  void AfterRead(int rc) {
    Status error;
    switch (read_.Finish(rc, read_op_.get(), tablet_, &error)) {
      case RowRead::Outcome::kNextPage:
        return;
      case RowRead::Outcome::kFenced: {
        Status s = state_->ReloadMap(tablet_.object);
        if (!s.ok()) return Fail(s);
        tablet_ = state_->TabletFor(w_.row);
        read_.Reset();
        return;
      }
      case RowRead::Outcome::kFailed:
        return Fail(error);
      case RowRead::Outcome::kDone:
        break;
    }
    // Every cell of the row, as ReadRow with no filter sees them.
    std::vector<std::pair<std::string_view, std::string_view>> entries;
    for (const auto& [k, v] : read_.entries()) entries.emplace_back(k, v);
    std::vector<Cell> cells;
    Status s = state_->AppendCells(entries, CellFilter(), &cells);
    if (!s.ok()) return Fail(s);
    engine::EvaluateConditions(*w_.conditions, cells, &result_);
    if (!result_.applied) return Finish(false);
    if (w_.mutation->empty()) return Finish(true);
    BuildGuarded();
    phase_ = Phase::kWrite;
  }

  // The key of column (family, qualifier) at `ts`.
  std::string Key(const std::string& family, const std::string& qualifier, uint64_t ts) const {
    return CellKey(ColumnPrefix(w_.row, state_->schema().FindFamily(family)->id, qualifier), ts);
  }
  // [first, end): the versions of the column at or below `ts`.
  std::pair<std::string, std::string> ColumnRange(const std::string& family,
                                                  const std::string& qualifier, uint64_t ts) const {
    const std::string prefix =
        ColumnPrefix(w_.row, state_->schema().FindFamily(family)->id, qualifier);
    return {CellKey(prefix, ts), CellKey(prefix, 0)};
  }

  void BuildBlind() {
    write_op_ = std::make_unique<RadosWriteOp>();
    RadosWriteOp& op = *write_op_;
    op.AssertExists();
    op.CmpXattr(kEpochXattr, tablet_.epoch);
    std::string ranges;
    for (const Condition& c : *w_.conditions) {
      if (IsRange(c)) {
        // Versions come newest first: from just after max_timestamp's key
        // (or the column's first) to min_timestamp's.
        const std::string prefix =
            ColumnPrefix(w_.row, state_->schema().FindFamily(c.family())->id, c.qualifier());
        PutField(&ranges, c.max_timestamp() == kMaxTimestamp
                              ? prefix
                              : CellKey(prefix, c.max_timestamp() + 1));
        PutField(&ranges, CellKey(prefix, c.min_timestamp()));
        continue;
      }
      const std::string key = Key(c.family(), c.qualifier(), c.min_timestamp());
      switch (c.kind()) {
        case Condition::Kind::kCellExists:
          op.OmapCmp(key, "", LIBRADOS_CMPXATTR_OP_GT);  // any stored value is above ""
          break;
        case Condition::Kind::kValueEquals:
          op.OmapCmp(key, Tagged(c.value()), LIBRADOS_CMPXATTR_OP_EQ);
          break;
        case Condition::Kind::kNoCellInRange:
          op.OmapCmp(key, "", LIBRADOS_CMPXATTR_OP_EQ);  // a missing key compares as ""
          break;
      }
    }
    ran_script_ = !ranges.empty();
    if (ran_script_)
      op.Exec("lua", "eval_bufferlist", LuaEval(kRangeScript, "strata_ranges_empty", ranges));
    // Entries in order; runs of puts go as one set.
    OmapEntries puts;
    auto flush = [&] {
      if (puts.empty()) return;  // no empty set operation on the wire
      op.OmapSet(puts);
      puts.clear();
    };
    const std::string row_prefix = RowPrefix(w_.row);
    for (const RowMutation::Entry& e : w_.mutation->entries()) {
      switch (e.kind) {
        case RowMutation::Kind::kPut:
          puts[Key(e.family, e.qualifier, e.timestamp)] = Tagged(e.value);
          break;
        case RowMutation::Kind::kDeleteCell:
          flush();
          op.OmapRemove({Key(e.family, e.qualifier, e.timestamp)});
          break;
        case RowMutation::Kind::kDeleteColumn: {
          flush();
          const auto [first, end] = ColumnRange(e.family, e.qualifier, e.timestamp);
          op.OmapRemoveRange(first, end);
          break;
        }
        case RowMutation::Kind::kDeleteRow:  // at kMaxTimestamp: every cell key
          flush();
          op.OmapRemoveRange(row_prefix + '\x02', row_prefix + '\xff');
          break;
      }
    }
    flush();
    op.OmapSetOne(rados_keys::VersionKey(w_.row), state_->NewVersion());
  }

  // The mutation applied to the keys read; the difference written, guarded
  // by the row's version.
  void BuildGuarded() {
    const std::string version_key = rados_keys::VersionKey(w_.row);
    OmapEntries before = read_.entries();
    before.erase(version_key);
    OmapEntries after = before;
    for (const RowMutation::Entry& e : w_.mutation->entries()) {
      switch (e.kind) {
        case RowMutation::Kind::kPut:
          after[Key(e.family, e.qualifier, e.timestamp)] = Tagged(e.value);
          break;
        case RowMutation::Kind::kDeleteCell:
          after.erase(Key(e.family, e.qualifier, e.timestamp));
          break;
        case RowMutation::Kind::kDeleteColumn: {
          const auto [first, end] = ColumnRange(e.family, e.qualifier, e.timestamp);
          after.erase(after.lower_bound(first), after.lower_bound(end));
          break;
        }
        case RowMutation::Kind::kDeleteRow: {
          rados_keys::DecodedKey key;
          std::erase_if(after, [&](const auto& kv) {
            return rados_keys::DecodeKey(kv.first, &key) && key.timestamp <= e.timestamp;
          });
          break;
        }
      }
    }
    std::vector<std::string> removed;
    for (const auto& [k, v] : before) {
      if (after.count(k) == 0) removed.push_back(k);
    }
    OmapEntries changed;
    for (const auto& [k, v] : after) {
      auto b = before.find(k);
      if (b == before.end() || b->second != v) changed.emplace(k, v);
    }
    write_op_ = std::make_unique<RadosWriteOp>();
    RadosWriteOp& op = *write_op_;
    op.AssertExists();
    op.CmpXattr(kEpochXattr, tablet_.epoch);
    op.OmapCmp(version_key, read_.version(), LIBRADOS_CMPXATTR_OP_EQ);
    op.OmapRemove(removed);
    if (after.empty()) {
      // An empty row keeps no version: "no version key" then means "no
      // cells", which is all a reader that saw it relied on.
      op.OmapRemove({version_key});
    } else {
      changed[version_key] = state_->NewVersion();
    }
    op.OmapSet(changed);
  }

  RadosStoreState* const state_;
  const RowWrite w_;
  RadosTablet tablet_;
  RowRead read_;
  Phase phase_;
  bool ran_script_ = false;  // the blind write checks ranges on the OSD
  std::unique_ptr<RadosReadOp> read_op_;
  std::unique_ptr<RadosWriteOp> write_op_;
  std::unique_ptr<RadosCall> call_;
  CheckAndMutateResult result_;
  Status status_;
};

}  // namespace

Result<std::vector<CheckAndMutateResult>> RadosWriteRows(RadosStoreState* state,
                                                         const std::vector<RowWrite>& rows) {
  const Clock::time_point deadline = state->Deadline();
  std::vector<std::unique_ptr<RowJob>> jobs;
  jobs.reserve(rows.size());
  for (const RowWrite& w : rows) jobs.push_back(std::make_unique<RowJob>(state, w));
  for (;;) {
    std::vector<RowJob*> running;
    for (auto& job : jobs) {
      if (!job->done()) running.push_back(job.get());
    }
    if (running.empty()) break;
    Status late = RadosStoreState::CheckDeadline(
        deadline, "writing rows of RADOS table '" + state->name() + "'");
    if (!late.ok()) {
      for (RowJob* job : running) job->Fail(late);
      break;
    }
    for (RowJob* job : running) job->Launch();
    for (RowJob* job : running) job->Advance();
  }
  for (auto& job : jobs) {
    if (job->status().ok() && job->result().applied) state->NoteWrite(job->tablet());
  }
  std::vector<CheckAndMutateResult> results;
  for (auto& job : jobs) {
    if (!job->status().ok()) return job->status();
    results.push_back(std::move(job->result()));
  }
  return results;
}

}  // namespace strata::cluster
