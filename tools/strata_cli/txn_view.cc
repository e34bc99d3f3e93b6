// `strata txn row` and `strata txn locks`: the Percolator cells of a
// transactional table (txn/FORMAT.md, "Transactional tables") decoded with
// the transaction layer's own decoders (txn/records.h), read from a snapshot
// of the engine directory. Nothing is resolved: a lock is shown as it is.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common/coding.h"
#include "output.h"
#include "snapshot.h"
#include "strata/row_store.h"
#include "strata/table.h"
#include "txn/lock_resolver.h"
#include "txn/records.h"

namespace strata::cli {

namespace {

// What a lock's primary says about its transaction: the primary's lock,
// commit record or rollback record of the lock's start_ts, read in the same
// snapshot (txn::ReadTxnStatus, as a lock resolver reads it). A secondary's
// TTL and owner decide nothing while its primary is locked: a resolver
// checks the primary's, and a heartbeat refreshes only the primary's.
struct PrimaryState {
  enum class Kind {
    kLocked,      // undecided: `lock` is the primary's lock
    kCommitted,   // at commit_ts: a reader rolls the lock forward
    kRolledBack,  // a reader rolls the lock back
    kNoRecord,    // no lock and no record: the primary is not prewritten yet
    kTableGone,   // the primary's table is not there (error says why)
    kUnreadable,  // the primary's cells cannot be read (error says why)
  };
  Kind kind = Kind::kLocked;
  txn::LockRecord lock;
  uint64_t commit_ts = 0;
  std::string error;
};

const char* PrimaryStateName(PrimaryState::Kind kind) {
  switch (kind) {
    case PrimaryState::Kind::kLocked:
      return "locked";
    case PrimaryState::Kind::kCommitted:
      return "committed";
    case PrimaryState::Kind::kRolledBack:
      return "rolled_back";
    case PrimaryState::Kind::kNoRecord:
      return "no_record";
    case PrimaryState::Kind::kTableGone:
      return "table_gone";
    case PrimaryState::Kind::kUnreadable:
      return "unreadable";
  }
  return "?";
}

// Reads the primaries of the locks of table args.table in the snapshot; the
// primary's table, when another, is opened through the snapshot engine.
class PrimaryReader {
 public:
  PrimaryReader(SnapshotEngine* engine, const Args& args, const Table& table)
      : engine_(engine), args_(args) {
    stores_[args.table] = NewTableRowStore(table);
  }
  PrimaryReader(const PrimaryReader&) = delete;
  PrimaryReader& operator=(const PrimaryReader&) = delete;

  // The state of the transaction of `lock`, found at (row, column).
  PrimaryState Read(std::string_view row, std::string_view column, const txn::LockRecord& lock) {
    PrimaryState state;
    if (lock.primary_table == args_.table && lock.primary_row == row &&
        lock.primary_column == column) {
      state.lock = lock;  // the primary itself
      return state;
    }
    auto it = stores_.find(lock.primary_table);
    if (it == stores_.end()) {
      Result<Table> table = engine_->FindTable(args_.tenant, lock.primary_table);
      if (!table.ok()) {
        state.kind = table.status().IsNotFound() ? PrimaryState::Kind::kTableGone
                                                 : PrimaryState::Kind::kUnreadable;
        state.error = engine_->InSource(table.status().ToString());
        if (state.kind == PrimaryState::Kind::kUnreadable) failures_++;
        return state;
      }
      it = stores_.emplace(lock.primary_table, NewTableRowStore(*table)).first;
    }
    Result<txn::TxnStatus> status =
        txn::ReadTxnStatus(*it->second, lock.primary_row, lock.primary_column, lock.start_ts);
    if (!status.ok()) {
      state.kind = PrimaryState::Kind::kUnreadable;
      state.error = engine_->InSource(status.status().ToString());
      failures_++;
      return state;
    }
    switch (status->state) {
      case txn::TxnStatus::State::kLocked:
        state.lock = status->lock;
        break;
      case txn::TxnStatus::State::kCommitted:
        state.kind = PrimaryState::Kind::kCommitted;
        state.commit_ts = status->commit_ts;
        break;
      case txn::TxnStatus::State::kRolledBack:
        state.kind =
            status->has_record ? PrimaryState::Kind::kRolledBack : PrimaryState::Kind::kNoRecord;
        break;
    }
    return state;
  }

  // How many primaries could not be read.
  int failures() const { return failures_; }

 private:
  SnapshotEngine* const engine_;
  const Args& args_;
  std::map<std::string, std::unique_ptr<RowStore>> stores_;  // by table name
  int failures_ = 0;
};

// What a command needs to show records: the table, the time now, the form
// of bytes, the JSON writer (nullptr: text) and the reader of primaries.
struct View {
  const Args& args;
  uint64_t now_millis;
  JsonWriter* json;
  PrimaryReader* primaries;
};

// Whether the TTL of `lock` is spent at `now_millis`.
bool TtlSpent(const txn::LockRecord& lock, uint64_t now_millis) {
  const uint64_t expires = lock.wall_millis + lock.ttl_millis < lock.wall_millis
                               ? UINT64_MAX
                               : lock.wall_millis + lock.ttl_millis;
  return now_millis > expires;
}

// A cell whose record does not decode.
struct Damaged {
  std::string row;
  std::string family;
  std::string column;
  uint64_t timestamp;
  std::string value;
  Status status;
};

void ShowDamaged(const View& v, const Damaged& d) {
  if (v.json != nullptr) {
    v.json->BeginObject();
    v.json->Bytes("row", d.row, v.args.hex);
    v.json->String("family", d.family);
    v.json->Bytes("column", d.column, v.args.hex);
    v.json->Timestamp("timestamp", d.timestamp);
    v.json->String("error", d.status.ToString());
    v.json->String("value_hex", HexBytes(d.value));
    v.json->End();
    return;
  }
  std::printf("  DAMAGED %s record of row %s column %s at %" PRIu64 ": %s\n", d.family.c_str(),
              ShowBytes(d.row, v.args.hex).c_str(), ShowBytes(d.column, v.args.hex).c_str(),
              d.timestamp, d.status.ToString().c_str());
}

// Where a value is: in the record, in the data family, or nowhere (a data
// cell missing, or collected).
struct Value {
  const char* where = nullptr;  // "inline", "data", "missing"; nullptr: no value (not a put)
  std::string bytes;
};

void ShowValueJson(const View& v, const Value& value) {
  if (value.where == nullptr) return;
  v.json->String("value_in", value.where);
  if (value.where != std::string_view("missing")) v.json->Bytes("value", value.bytes, v.args.hex);
}

// The value of a record of a put (`put`): inline, or `data`, the data cell
// at the record's start_ts (nullptr: there is none).
Value PutValue(bool put, bool has_inline, const std::string& inline_value, const Cell* data) {
  if (!put) return Value();
  if (has_inline) return Value{"inline", inline_value};
  if (data == nullptr) return Value{"missing", ""};
  return Value{"data", data->value};
}

std::string ValueText(const View& v, const Value& value) {
  if (value.where == nullptr) return "";
  if (value.where == std::string_view("missing")) return ", value missing (no data cell)";
  return ", value " + ShowBytes(value.bytes, v.args.hex) + " (" + value.where + ")";
}

// The state of a secondary lock's primary, for the lock's text line.
std::string PrimaryStateText(const View& v, const txn::LockRecord& lock, const PrimaryState& p) {
  switch (p.kind) {
    case PrimaryState::Kind::kLocked:
      return "primary locked: age " +
             ShowSeconds(static_cast<int64_t>(v.now_millis - p.lock.wall_millis)) + ", ttl " +
             std::to_string(p.lock.ttl_millis) + " ms (" +
             (TtlSpent(p.lock, v.now_millis) ? "spent" : "not spent") + "), " +
             (p.lock.owner.instance_id == 0 ? "no owner" : "owner " + p.lock.owner.ToString());
    case PrimaryState::Kind::kCommitted:
      return "primary committed at commit_ts " + ShowTimestamp(p.commit_ts) +
             ": a reader rolls this lock forward";
    case PrimaryState::Kind::kRolledBack:
      return "primary rolled back: a reader rolls this lock back";
    case PrimaryState::Kind::kNoRecord:
      return std::string("primary has no lock or record of start_ts ") +
             std::to_string(lock.start_ts) + " (not prewritten yet): this lock's ttl is " +
             (TtlSpent(lock, v.now_millis) ? "spent" : "not spent");
    case PrimaryState::Kind::kTableGone:
      return "primary's table is not there: " + p.error;
    case PrimaryState::Kind::kUnreadable:
      return "primary cannot be read: " + p.error;
  }
  return "";
}

// A lock record, with the state of its transaction as its primary says.
// `row` and `column` go into the JSON object and the text line only when
// `located` (txn locks lists them; txn row groups by column).
void ShowLock(const View& v, std::string_view row, std::string_view column,
              const txn::LockRecord& lock, const Value& value, bool located) {
  const int64_t age = static_cast<int64_t>(v.now_millis - lock.wall_millis);
  const bool spent = TtlSpent(lock, v.now_millis);
  const PrimaryState p = v.primaries->Read(row, column, lock);
  const bool is_primary = lock.primary_table == v.args.table && lock.primary_row == row &&
                          lock.primary_column == column;
  if (v.json != nullptr) {
    JsonWriter* j = v.json;
    j->BeginObject();
    if (located) {
      j->Bytes("row", row, v.args.hex);
      j->Bytes("column", column, v.args.hex);
    }
    j->Timestamp("start_ts", lock.start_ts);
    j->String("kind", txn::MutationKindName(lock.kind));
    j->BeginObject("primary");
    j->Bytes("table", lock.primary_table, false);  // a table name, as every other
    j->Bytes("row", lock.primary_row, v.args.hex);
    j->Bytes("column", lock.primary_column, v.args.hex);
    j->End();
    j->Bool("is_primary", is_primary);
    j->Number("wall_millis", lock.wall_millis);
    j->String("wall_time", MillisTime(lock.wall_millis));
    j->Signed("age_millis", age);
    j->Number("ttl_millis", lock.ttl_millis);
    j->Bool("ttl_spent", spent);
    j->Timestamp("min_commit_ts", lock.min_commit_ts);
    j->BeginObject("owner");
    j->Number("instance", lock.owner.instance_id);
    j->Number("token", lock.owner.token);
    j->End();
    j->String("primary_state", PrimaryStateName(p.kind));
    if (p.kind == PrimaryState::Kind::kLocked) {
      j->Signed("primary_age_millis", static_cast<int64_t>(v.now_millis - p.lock.wall_millis));
      j->Number("primary_ttl_millis", p.lock.ttl_millis);
      j->Bool("primary_ttl_spent", TtlSpent(p.lock, v.now_millis));
      j->BeginObject("primary_owner");
      j->Number("instance", p.lock.owner.instance_id);
      j->Number("token", p.lock.owner.token);
      j->End();
    }
    if (p.kind == PrimaryState::Kind::kCommitted) j->Timestamp("primary_commit_ts", p.commit_ts);
    if (!p.error.empty()) j->String("primary_error", p.error);
    ShowValueJson(v, value);
    j->End();
    return;
  }
  std::string where;
  if (located) {
    where = "row " + ShowBytes(row, v.args.hex) + " column " + ShowBytes(column, v.args.hex) + ": ";
  } else {
    where = "lock: ";
  }
  const std::string owner =
      lock.owner.instance_id == 0 ? "no owner" : "owner " + lock.owner.ToString();
  if (is_primary) {
    std::printf("  %sstart_ts %s, %s, primary (itself), age %s, ttl %" PRIu64
                " ms (%s), min_commit_ts %" PRIu64 ", %s%s\n",
                where.c_str(), ShowTimestamp(lock.start_ts).c_str(),
                txn::MutationKindName(lock.kind), ShowSeconds(age).c_str(), lock.ttl_millis,
                spent ? "spent" : "not spent", lock.min_commit_ts, owner.c_str(),
                ValueText(v, value).c_str());
    return;
  }
  // A secondary's own TTL is not judged: its primary's state decides.
  const std::string primary = ShowBytes(lock.primary_table, false) + "/" +
                              ShowBytes(lock.primary_row, v.args.hex) + "/" +
                              ShowBytes(lock.primary_column, v.args.hex);
  std::printf("  %sstart_ts %s, %s, primary %s, age %s, ttl %" PRIu64 " ms, min_commit_ts %" PRIu64
              ", %s%s; %s\n",
              where.c_str(), ShowTimestamp(lock.start_ts).c_str(), txn::MutationKindName(lock.kind),
              primary.c_str(), ShowSeconds(age).c_str(), lock.ttl_millis, lock.min_commit_ts,
              owner.c_str(), ValueText(v, value).c_str(), PrimaryStateText(v, lock, p).c_str());
}

// A write record at `ts` (its commit_ts, or for a rollback its start_ts).
void ShowWrite(const View& v, uint64_t ts, const txn::WriteRecord& w, const Value& value) {
  const bool rollback = w.kind == txn::WriteKind::kRollback;
  if (v.json != nullptr) {
    JsonWriter* j = v.json;
    j->BeginObject();
    j->Timestamp(rollback ? "rollback_ts" : "commit_ts", ts);
    j->String("kind", txn::WriteKindName(w.kind));
    j->Timestamp("start_ts", w.start_ts);
    if (rollback && w.rolled_back_by == 0) j->Null("rolled_back_by");
    if (rollback && w.rolled_back_by != 0) j->Timestamp("rolled_back_by", w.rolled_back_by);
    ShowValueJson(v, value);
    j->End();
    return;
  }
  if (rollback) {
    std::printf("  write at %s: rollback of start_ts %" PRIu64 ", %s\n", ShowTimestamp(ts).c_str(),
                w.start_ts,
                w.rolled_back_by == 0 ? "by a lock resolver or its coordinator"
                                      : ("by the transaction at start_ts " +
                                         std::to_string(w.rolled_back_by) + " to take its lock")
                                            .c_str());
    return;
  }
  std::printf("  write commit_ts %s: %s of start_ts %s%s\n", ShowTimestamp(ts).c_str(),
              txn::WriteKindName(w.kind), ShowTimestamp(w.start_ts).c_str(),
              ValueText(v, value).c_str());
}

// The cells of one user column, newest first in each family.
struct Column {
  std::vector<const Cell*> data, write, lock, notify, ack;
};

// One user column's history. Adds undecodable records to *damaged.
void ShowColumn(const View& v, std::string_view row, const std::string& name, const Column& c,
                std::vector<Damaged>* damaged) {
  std::map<uint64_t, const Cell*> data;  // start_ts -> data cell
  for (const Cell* d : c.data) data[d->timestamp] = d;
  std::set<uint64_t> named;  // the start_ts of data cells a record names
  // The value of a put: inline, or the data cell at its start_ts.
  auto value_of = [&](bool put, bool inline_value, const std::string& bytes, uint64_t start_ts) {
    auto it = data.find(start_ts);
    const Cell* cell = it == data.end() ? nullptr : it->second;
    if (put && !inline_value && cell != nullptr) named.insert(start_ts);
    return PutValue(put, inline_value, bytes, cell);
  };
  auto damage = [&](const Cell* cell, const Status& s) {
    damaged->push_back(
        Damaged{std::string(row), cell->family, name, cell->timestamp, cell->value, s});
  };
  if (v.json != nullptr) {
    v.json->BeginObject();
    v.json->Bytes("column", name, v.args.hex);
    v.json->BeginArray("locks");
  } else {
    std::printf("column %s:\n", ShowBytes(name, v.args.hex).c_str());
  }
  for (const Cell* cell : c.lock) {
    txn::LockRecord lock;
    if (Status s = txn::DecodeLock(cell->value, &lock); !s.ok()) {
      damage(cell, s);
      continue;
    }
    ShowLock(v, row, name, lock,
             value_of(lock.kind == txn::MutationKind::kPut, lock.has_inline_value,
                      lock.inline_value, lock.start_ts),
             /*located=*/false);
  }
  if (v.json != nullptr) {
    v.json->End();
    v.json->BeginArray("writes");
  }
  for (const Cell* cell : c.write) {
    txn::WriteRecord w;
    if (Status s = txn::DecodeWrite(cell->value, &w); !s.ok()) {
      damage(cell, s);
      continue;
    }
    ShowWrite(
        v, cell->timestamp, w,
        value_of(w.kind == txn::WriteKind::kPut, w.has_inline_value, w.inline_value, w.start_ts));
  }
  if (v.json != nullptr) {
    v.json->End();
    v.json->BeginArray("unreferenced_data");
  }
  // Newest first, as the other families.
  for (const Cell* d : c.data) {
    if (named.count(d->timestamp) != 0) continue;
    if (v.json != nullptr) {
      v.json->BeginObject();
      v.json->Timestamp("start_ts", d->timestamp);
      v.json->Bytes("value", d->value, v.args.hex);
      v.json->End();
    } else {
      std::printf("  data start_ts %s: %s (no write record or lock names it)\n",
                  ShowTimestamp(d->timestamp).c_str(), ShowBytes(d->value, v.args.hex).c_str());
    }
  }
  if (v.json != nullptr) v.json->End();
  for (const auto& [family, cells] :
       {std::pair{"notifications", &c.notify}, std::pair{"acks", &c.ack}}) {
    if (v.json != nullptr) {
      v.json->BeginArray(family);
      for (const Cell* n : *cells) {
        v.json->BeginObject();
        v.json->Timestamp("ts", n->timestamp);
        v.json->End();
      }
      v.json->End();
    } else {
      for (const Cell* n : *cells) {
        std::printf("  %s %s\n", family == std::string_view("acks") ? "ack" : "notification",
                    ShowTimestamp(n->timestamp).c_str());
      }
    }
  }
  if (v.json != nullptr) v.json->End();
}

void ShowHeader(const View& v, const std::string& what) {
  BeginTableOutput(v.args, v.json, what + " of ", ", now " + MillisTime(v.now_millis));
  if (v.json != nullptr) {
    v.json->Number("now_millis", v.now_millis);
    v.json->String("now_time", MillisTime(v.now_millis));
  }
}

// The damaged records found, as a JSON array or text lines; the exit code.
int FinishDamaged(const View& v, const std::vector<Damaged>& damaged) {
  if (v.json != nullptr) {
    v.json->BeginArray("damaged");
    for (const Damaged& d : damaged) ShowDamaged(v, d);
    v.json->End();
    v.json->End();
  } else {
    for (const Damaged& d : damaged) ShowDamaged(v, d);
  }
  if (!damaged.empty()) {
    PrintError(std::to_string(damaged.size()) + " records cannot be decoded");
  }
  const int unread = v.primaries->failures();
  if (unread != 0) PrintError(std::to_string(unread) + " locks' primaries cannot be read");
  return damaged.empty() && unread == 0 ? kExitOk : kExitProblem;
}

}  // namespace

int CmdTxnRow(const Args& args) {
  std::unique_ptr<SnapshotEngine> engine;
  Table table;
  if (std::optional<int> code = OpenForRead(args, /*transactional=*/true, &engine, &table))
    return *code;
  RowFilter filter;
  if (args.column) {
    for (std::string_view f : {txn::kDataFamily, txn::kWriteFamily, txn::kLockFamily,
                               txn::kNotifyFamily, txn::kAckFamily}) {
      filter.columns.emplace_back(std::string(f), *args.column);
    }
  }
  Result<std::vector<Cell>> cells = table.ReadRow(ReadOptions(), args.row, filter);
  if (!cells.ok()) return engine->ReadFailed(cells.status());
  std::map<std::string, Column> columns;
  for (const Cell& c : *cells) {
    Column& column = columns[c.qualifier];
    if (c.family == txn::kDataFamily) column.data.push_back(&c);
    if (c.family == txn::kWriteFamily) column.write.push_back(&c);
    if (c.family == txn::kLockFamily) column.lock.push_back(&c);
    if (c.family == txn::kNotifyFamily) column.notify.push_back(&c);
    if (c.family == txn::kAckFamily) column.ack.push_back(&c);
  }
  std::unique_ptr<JsonWriter> json;
  if (args.json) json = std::make_unique<JsonWriter>(stdout);
  PrimaryReader primaries(engine.get(), args, table);
  const View v{args, NowMillis(), json.get(), &primaries};
  ShowHeader(v, "row " + ShowBytes(args.row, args.hex));
  if (json != nullptr) {
    json->Bytes("row", args.row, args.hex);
    json->BeginArray("columns");
  }
  std::vector<Damaged> damaged;
  size_t locks = 0, writes = 0;
  for (const auto& [name, column] : columns) {
    ShowColumn(v, args.row, name, column, &damaged);
    locks += column.lock.size();
    writes += column.write.size();
  }
  if (json != nullptr) {
    json->End();
  } else {
    std::printf("%s, %s, %s\n", Count(columns.size(), "column", "columns").c_str(),
                Count(locks, "lock", "locks").c_str(),
                Count(writes, "write record", "write records").c_str());
  }
  const int code = FinishDamaged(v, damaged);
  if (std::optional<int> close = engine->Close()) return *close;
  return code;
}

int CmdTxnLocks(const Args& args) {
  std::unique_ptr<SnapshotEngine> engine;
  Table table;
  if (std::optional<int> code = OpenForRead(args, /*transactional=*/true, &engine, &table))
    return *code;
  ScanSpec spec;
  spec.filter.families = {std::string(txn::kLockFamily)};
  Result<std::unique_ptr<RowIterator>> it = table.Scan(ReadOptions(), spec);
  if (!it.ok()) return engine->ReadFailed(it.status());
  std::unique_ptr<JsonWriter> json;
  if (args.json) json = std::make_unique<JsonWriter>(stdout);
  PrimaryReader primaries(engine.get(), args, table);
  const View v{args, NowMillis(), json.get(), &primaries};
  const uint64_t min_age = args.older_than_seconds * 1000;
  ShowHeader(v, args.older_than_seconds == 0
                    ? "locks"
                    : "locks at least " + std::to_string(args.older_than_seconds) + " s old");
  if (json != nullptr) {
    json->Number("older_than_seconds", args.older_than_seconds);
    json->BeginArray("locks");
  }
  std::vector<Damaged> damaged;
  uint64_t total = 0, old = 0, shown = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    for (const CellView& c : (*it)->cell_views()) {
      total++;
      txn::LockRecord lock;
      if (Status s = txn::DecodeLock(c.value, &lock); !s.ok()) {
        damaged.push_back(Damaged{std::string((*it)->row()), std::string(c.family),
                                  std::string(c.qualifier), c.timestamp, std::string(c.value), s});
        continue;
      }
      const int64_t age = static_cast<int64_t>(v.now_millis - lock.wall_millis);
      if (min_age != 0 && (age < 0 || static_cast<uint64_t>(age) < min_age)) continue;
      old++;
      if (args.limit != 0 && shown == args.limit) continue;
      shown++;
      // The value, as txn row shows it: inline, or from the data family.
      std::vector<Cell> data;
      const bool put = lock.kind == txn::MutationKind::kPut;
      if (put && !lock.has_inline_value) {
        RowFilter filter;
        filter.columns = {{std::string(txn::kDataFamily), std::string(c.qualifier)}};
        filter.min_timestamp = filter.max_timestamp = lock.start_ts;
        Result<std::vector<Cell>> read = table.ReadRow(ReadOptions(), (*it)->row(), filter);
        if (!read.ok()) return engine->ReadFailed(read.status(), json.get());
        data = std::move(read).value();
      }
      const Cell* cell = data.empty() ? nullptr : &data.front();
      ShowLock(v, (*it)->row(), c.qualifier, lock,
               PutValue(put, lock.has_inline_value, lock.inline_value, cell), /*located=*/true);
    }
  }
  if (!(*it)->status().ok()) return engine->ReadFailed((*it)->status(), json.get());
  if (json != nullptr) {
    json->End();
    json->Number("locks_total", total);
    json->Number("locks_old_enough", old);
    json->Number("locks_shown", shown);
  } else {
    if (shown < old) std::printf("  ... %" PRIu64 " more\n", old - shown);
    std::printf("%s", Count(old, "lock", "locks").c_str());
    if (args.older_than_seconds != 0) {
      std::printf(" at least %" PRIu64 " s old", args.older_than_seconds);
    }
    std::printf(" (of %" PRIu64 " in the table)\n", total);
  }
  const int code = FinishDamaged(v, damaged);
  it->reset();  // before the engine closes
  if (std::optional<int> close = engine->Close()) return *close;
  return code;
}

}  // namespace strata::cli
