// The Percolator cells of a transactional table: the names of its families
// and the encodings of lock and write records (txn/FORMAT.md, "Transactional
// tables"). Pure value types and functions; thread-compatible.
#ifndef STRATA_TXN_RECORDS_H_
#define STRATA_TXN_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/options.h"
#include "strata/status.h"
#include "strata/transaction.h"
#include "txn/liveness_registry.h"

namespace strata::txn {

// DO NOT CHANGE: family and group names are stored in the manifest.
inline constexpr std::string_view kDataFamily = "data";
inline constexpr std::string_view kWriteFamily = "write";
inline constexpr std::string_view kLockFamily = "lock";
inline constexpr std::string_view kNotifyFamily = "notify";
inline constexpr std::string_view kAckFamily = "ack";

// The schema of a transactional table: one family per locality group of the
// same name, `lock` and `notify` in memory; `lock` takes options.lock_group,
// the others options.data_group; `lock`'s column markers hide by timestamp
// (ColumnFamilyOptions::column_markers_hide_by_timestamp).
TableSchema TransactionalSchema(const TransactionalTableOptions& options);
// Whether `schema` is one TransactionalSchema made (any group options, and
// `lock` with or without column_markers_hide_by_timestamp: tables created
// before it was set keep working, only their lock reads walk further).
bool IsTransactionalSchema(const TableSchema& schema);

// What a transaction does to a cell. DO NOT CHANGE: stored in records.
enum class MutationKind : uint8_t {
  kPut = 1,
  kDelete = 2,
  kLock = 3,  // GetForUpdate: conflicts like a write, changes no value
};

// The value of a `lock` cell, at the transaction's start_ts.
struct LockRecord {
  MutationKind kind = MutationKind::kPut;
  uint64_t start_ts = 0;
  // Wall-clock milliseconds when the lock was written (or last refreshed
  // together with ttl_millis); the lock may be rolled back by anyone once
  // the wall clock passes wall_millis + ttl_millis.
  uint64_t wall_millis = 0;
  uint64_t ttl_millis = 0;
  // The transaction must commit at or above this (readers push it).
  uint64_t min_commit_ts = 0;
  Owner owner;
  // Where the primary lock is. For the primary itself, its own location.
  std::string primary_table;
  std::string primary_row;
  std::string primary_column;
  // The value when it is stored inline (kind kPut, short value).
  bool has_inline_value = false;
  std::string inline_value;

  friend bool operator==(const LockRecord&, const LockRecord&) = default;
};

enum class WriteKind : uint8_t {
  kPut = 1,
  kDelete = 2,
  kLock = 3,
  kRollback = 4,
};

// The value of a `write` cell: at commit_ts for a commit, at start_ts for a
// rollback.
struct WriteRecord {
  WriteKind kind = WriteKind::kPut;
  uint64_t start_ts = 0;
  // kRollback: the start_ts of the older transaction that rolled this one
  // back to take its lock, or 0 when a lock resolver did (TTL, dead owner,
  // the coordinator itself).
  uint64_t rolled_back_by = 0;
  bool has_inline_value = false;
  std::string inline_value;

  friend bool operator==(const WriteRecord&, const WriteRecord&) = default;
};

std::string EncodeLock(const LockRecord& lock);
// Corruption naming what is wrong; NotSupported for an unknown version.
Status DecodeLock(std::string_view bytes, LockRecord* lock);

std::string EncodeWrite(const WriteRecord& write);
Status DecodeWrite(std::string_view bytes, WriteRecord* write);

const char* MutationKindName(MutationKind kind);
const char* WriteKindName(WriteKind kind);

}  // namespace strata::txn

#endif  // STRATA_TXN_RECORDS_H_
