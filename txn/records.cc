#include "txn/records.h"

#include "common/coding.h"
#include "strata/slice.h"
#include "strata/transaction.h"

namespace strata::txn {

namespace {

constexpr uint8_t kRecordVersion = 1;
constexpr uint8_t kFlagInlineValue = 1;
constexpr uint8_t kKnownFlags = kFlagInlineValue;

void PutString(std::string* dst, std::string_view s) {
  PutLengthPrefixedSlice(dst, Slice(s.data(), s.size()));
}

bool GetString(Slice* in, std::string* out) {
  Slice s;
  if (!GetLengthPrefixedSlice(in, &s)) return false;
  out->assign(s.data(), s.size());
  return true;
}

// Reads the common head: version, kind, flags, start_ts.
Status GetHead(Slice* in, const char* what, uint8_t max_kind, uint8_t* kind, uint8_t* flags,
               uint64_t* start_ts) {
  if (in->size() < 3) return Status::Corruption(std::string(what) + " record too short");
  const uint8_t version = static_cast<uint8_t>((*in)[0]);
  *kind = static_cast<uint8_t>((*in)[1]);
  *flags = static_cast<uint8_t>((*in)[2]);
  in->remove_prefix(3);
  if (version != kRecordVersion) {
    return Status::NotSupported(std::string(what) + " record of unknown version " +
                                std::to_string(version));
  }
  if (*kind < 1 || *kind > max_kind) {
    return Status::Corruption(std::string(what) + " record of unknown kind " +
                              std::to_string(*kind));
  }
  if ((*flags & ~kKnownFlags) != 0) {
    return Status::Corruption(std::string(what) + " record with unknown flags " +
                              std::to_string(*flags));
  }
  if (!GetFixed64(in, start_ts)) {
    return Status::Corruption(std::string(what) + " record truncated in start_ts");
  }
  return Status::OK();
}

}  // namespace

TableSchema TransactionalSchema(const TransactionalTableOptions& options) {
  TableSchema schema;
  auto group = [&](std::string_view name, bool in_memory, const LocalityGroupOptions& from,
                   bool markers_hide_by_timestamp) {
    LocalityGroupOptions g = from;
    g.name = std::string(name);
    g.in_memory = in_memory;
    schema.locality_groups.push_back(g);
    schema.families.push_back(ColumnFamilyOptions{
        .name = std::string(name),
        .locality_group = std::string(name),
        .column_markers_hide_by_timestamp = markers_hide_by_timestamp,
    });
  };
  group(kDataFamily, /*in_memory=*/false, options.data_group, /*markers_hide_by_timestamp=*/false);
  group(kWriteFamily, /*in_memory=*/false, options.data_group, /*markers_hide_by_timestamp=*/false);
  // No lock is written below a commit's column marker after it (FORMAT.md,
  // "How locks are erased"), so reads of a lock stop at the newest marker.
  // Not `notify`: a notification written later below a run's marker must
  // not be hidden ("Notifications").
  group(kLockFamily, /*in_memory=*/true, options.lock_group, /*markers_hide_by_timestamp=*/true);
  group(kNotifyFamily, /*in_memory=*/true, options.notify_group,
        /*markers_hide_by_timestamp=*/false);
  group(kAckFamily, /*in_memory=*/false, options.data_group, /*markers_hide_by_timestamp=*/false);
  return schema;
}

bool IsTransactionalSchema(const TableSchema& schema) {
  const TableSchema want = TransactionalSchema({});
  if (schema.families.size() != want.families.size() ||
      schema.locality_groups.size() != want.locality_groups.size()) {
    return false;
  }
  for (size_t i = 0; i < want.families.size(); ++i) {
    if (schema.families[i].name != want.families[i].name ||
        schema.locality_groups[i].name != want.locality_groups[i].name ||
        schema.locality_groups[i].in_memory != want.locality_groups[i].in_memory) {
      return false;
    }
  }
  return true;
}

std::string EncodeLock(const LockRecord& lock) {
  std::string out;
  out.reserve(48 + lock.primary_table.size() + lock.primary_row.size() +
              lock.primary_column.size() + lock.inline_value.size());
  out.push_back(static_cast<char>(kRecordVersion));
  out.push_back(static_cast<char>(lock.kind));
  out.push_back(static_cast<char>(lock.has_inline_value ? kFlagInlineValue : 0));
  PutFixed64(&out, lock.start_ts);
  PutVarint64(&out, lock.wall_millis);
  PutVarint64(&out, lock.ttl_millis);
  PutFixed64(&out, lock.min_commit_ts);
  PutVarint64(&out, lock.owner.instance_id);
  PutVarint64(&out, lock.owner.token);
  PutString(&out, lock.primary_table);
  PutString(&out, lock.primary_row);
  PutString(&out, lock.primary_column);
  if (lock.has_inline_value) PutString(&out, lock.inline_value);
  return out;
}

Status DecodeLock(std::string_view bytes, LockRecord* lock) {
  Slice in(bytes.data(), bytes.size());
  uint8_t kind = 0;
  uint8_t flags = 0;
  STRATA_RETURN_IF_ERROR(GetHead(&in, "lock", 3, &kind, &flags, &lock->start_ts));
  lock->kind = static_cast<MutationKind>(kind);
  lock->has_inline_value = (flags & kFlagInlineValue) != 0;
  if (!GetVarint64(&in, &lock->wall_millis) || !GetVarint64(&in, &lock->ttl_millis) ||
      !GetFixed64(&in, &lock->min_commit_ts) || !GetVarint64(&in, &lock->owner.instance_id) ||
      !GetVarint64(&in, &lock->owner.token) || !GetString(&in, &lock->primary_table) ||
      !GetString(&in, &lock->primary_row) || !GetString(&in, &lock->primary_column)) {
    return Status::Corruption("lock record truncated");
  }
  lock->inline_value.clear();
  if (lock->has_inline_value) {
    if (lock->kind != MutationKind::kPut) {
      return Status::Corruption("lock record of a non-put with an inline value");
    }
    if (!GetString(&in, &lock->inline_value)) {
      return Status::Corruption("lock record truncated in its inline value");
    }
  }
  if (!in.empty()) return Status::Corruption("lock record with trailing bytes");
  return Status::OK();
}

std::string EncodeWrite(const WriteRecord& write) {
  std::string out;
  out.reserve(16 + write.inline_value.size());
  out.push_back(static_cast<char>(kRecordVersion));
  out.push_back(static_cast<char>(write.kind));
  out.push_back(static_cast<char>(write.has_inline_value ? kFlagInlineValue : 0));
  PutFixed64(&out, write.start_ts);
  if (write.kind == WriteKind::kRollback) PutVarint64(&out, write.rolled_back_by);
  if (write.has_inline_value) PutString(&out, write.inline_value);
  return out;
}

Status DecodeWrite(std::string_view bytes, WriteRecord* write) {
  Slice in(bytes.data(), bytes.size());
  uint8_t kind = 0;
  uint8_t flags = 0;
  STRATA_RETURN_IF_ERROR(GetHead(&in, "write", 4, &kind, &flags, &write->start_ts));
  write->kind = static_cast<WriteKind>(kind);
  write->has_inline_value = (flags & kFlagInlineValue) != 0;
  write->rolled_back_by = 0;
  write->inline_value.clear();
  if (write->kind == WriteKind::kRollback && !GetVarint64(&in, &write->rolled_back_by)) {
    return Status::Corruption("write record truncated in rolled_back_by");
  }
  if (write->has_inline_value) {
    if (write->kind != WriteKind::kPut) {
      return Status::Corruption("write record of a non-put with an inline value");
    }
    if (!GetString(&in, &write->inline_value)) {
      return Status::Corruption("write record truncated in its inline value");
    }
  }
  if (!in.empty()) return Status::Corruption("write record with trailing bytes");
  return Status::OK();
}

const char* MutationKindName(MutationKind kind) {
  switch (kind) {
    case MutationKind::kPut:
      return "put";
    case MutationKind::kDelete:
      return "delete";
    case MutationKind::kLock:
      return "lock";
  }
  return "unknown";
}

const char* WriteKindName(WriteKind kind) {
  switch (kind) {
    case WriteKind::kPut:
      return "put";
    case WriteKind::kDelete:
      return "delete";
    case WriteKind::kLock:
      return "lock";
    case WriteKind::kRollback:
      return "rollback";
  }
  return "unknown";
}

}  // namespace strata::txn
