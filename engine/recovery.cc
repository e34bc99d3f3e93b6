#include "engine/recovery.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/log_record.h"
#include "engine/tablet.h"
#include "wal/log_reader.h"

namespace strata::engine {

namespace {

wal::RecoveryMode ToWalMode(WalRecoveryMode m) {
  switch (m) {
    case WalRecoveryMode::kTolerateTornTail: return wal::RecoveryMode::kTolerateTornTail;
    case WalRecoveryMode::kAbsoluteConsistency: return wal::RecoveryMode::kAbsoluteConsistency;
    case WalRecoveryMode::kPointInTime: return wal::RecoveryMode::kPointInTime;
  }
  return wal::RecoveryMode::kTolerateTornTail;
}

// Inserts one log record's rows into their tablets' memtables.
Status ReplayRecord(VersionSet* versions, SequenceNumber first_sequence, uint64_t count,
                    Slice payload) {
  std::vector<LoggedRow> rows;
  LogRecordKind kind;
  Status s = DecodeLogRecord(payload, &rows, &kind);
  if (!s.ok()) return s.WithContext("record at sequence " + std::to_string(first_sequence));
  if (kind == LogRecordKind::kSequenceSkip) return Status::OK();  // its numbers hold no data
  uint64_t entries = 0;
  for (const auto& r : rows) entries += r.entries.size();
  if (entries != count) {
    return Status::Corruption("log record at sequence " + std::to_string(first_sequence) +
                              " holds " + std::to_string(entries) + " entries but uses " +
                              std::to_string(count) + " sequence numbers");
  }
  SequenceNumber seq = first_sequence;
  for (const auto& r : rows) {
    bool retired = false;
    TabletState* tablet = versions->ReplayTablet(r.tablet_id, &retired);
    if (retired) {
      seq += r.entries.size();  // its table was dropped after this was logged
      continue;
    }
    if (tablet == nullptr) {
      // Tablets are never removed yet, so a record naming an unknown one means
      // the log and the manifest disagree.
      return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                " names unknown tablet " + std::to_string(r.tablet_id));
    }
    // Replay runs alone, before the core is shared: the schema is the last
    // one the manifest holds. A family id it lacks but once gave out belongs
    // to a family removed since, which held no data then: InsertEntries
    // skips its entries, as it skips those logged before a family moved.
    std::shared_ptr<const Schema> schema = tablet->table->schema();
    for (const auto& e : r.entries) {
      if (e.type != CellType::kDeleteRow && schema->FamilyById(e.family) == nullptr &&
          (e.family == kRowMarkerFamily || e.family >= schema->next_family_id())) {
        return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                  " names unknown family id " + std::to_string(e.family));
      }
    }
    InsertEntries(*tablet, *schema, r.row, r.entries, seq, /*replay=*/true, nullptr);
    seq += r.entries.size();
  }
  return Status::OK();
}

}  // namespace

Status RecoverTablets(FileSystem* fs, const std::string& log_dir, WalRecoveryMode mode,
                      VersionSet* versions, LiveFiles* files, SequenceNumber* next) {
  STRATA_RETURN_IF_ERROR(fs->CreateDirIfMissing(log_dir));
  STRATA_RETURN_IF_ERROR(
      versions->CheckLogSegment(log_dir, mode == WalRecoveryMode::kPointInTime));
  wal::RecoveryInfo info;
  const SequenceNumber log_floor = versions->log_floor();
  // Without a floor, the log must still hold everything from the first
  // sequence number on: a missing oldest segment is corruption too. When
  // recovery drops a tail with whole segments, the manifest first names the
  // last one kept, so that a crash in between does not leave it naming one
  // that is gone.
  STRATA_RETURN_IF_ERROR(wal::RecoverLog(
      fs, log_dir, ToWalMode(mode), std::max<SequenceNumber>(log_floor, 1),
      [versions](SequenceNumber first, uint64_t count, Slice payload) {
        return ReplayRecord(versions, first, count, payload);
      },
      &info,
      [versions](uint64_t last_kept) { return versions->RecordKeptLogSegment(last_kept); }));
  // Only now that the manifest and the log agree: a catalog that misses
  // files must not cost them.
  STRATA_RETURN_IF_ERROR(files->DeleteUnlisted(versions->LiveFileNumbers()));
  // With records in the log, the writer continues right after them (the log
  // was synced before any flush recorded a later sequence); an empty log
  // continues after the last sequence the manifest saw.
  *next = info.records > 0 || info.records_skipped > 0
          ? info.next_sequence
          : std::max<SequenceNumber>(versions->last_sequence() + 1, 1);
  // A log left without records (a point-in-time recovery dropped them all,
  // or every one was flushed) needs nothing below `next` any more: say so,
  // or the next open would want the records it no longer has.
  if (info.records == 0 && info.records_skipped == 0 &&
      *next > std::max<SequenceNumber>(log_floor, 1)) {
    STRATA_RETURN_IF_ERROR(versions->RaiseLogFloor(*next));
  }
  return Status::OK();
}

}  // namespace strata::engine
