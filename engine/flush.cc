#include "engine/flush.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/compaction_stream.h"
#include "engine/point_read.h"
#include "engine/table_file_writer.h"
#include "engine/test_hooks.h"

namespace strata::engine {

Status FlushJob::WriteFile(InternalIterator* it, DeeperFiles* older, FileMeta* meta) {
  const TabletState& tablet = *group_->tablet;
  TableFileWriter writer(ctx_.fs, ctx_.files->dir());
  // The options of the group as the flush starts apply to its file.
  const std::shared_ptr<const Schema> schema = tablet.table->schema();
  const LocalityGroupOptions& group_options = schema->locality_groups()[group_->index];
  STRATA_RETURN_IF_ERROR(
      writer.Open(ctx_.versions->NewFileNumber(), tablet, group_->index, group_options));
  CompactionStream stream(
      /*bottommost=*/false, /*filter=*/nullptr,
      FilterContextFor(tablet, group_options, /*bottommost=*/false), schema.get(),
      [&](const Slice& key, const Slice& value) { return writer.Add(key, value); },
      [older](const Slice& row) { return older->MayHoldRow(row); });
  Status s;
  for (it->SeekToFirst(); it->Valid() && s.ok(); it->Next()) {
    s = stream.Add(it->key(), it->value());
  }
  if (s.ok()) s = it->status();
  if (s.ok()) s = stream.Finish();
  if (s.ok() && writer.meta().entries == 0) {
    // Everything cancelled out: no file.
    writer.Abandon();
    *meta = writer.meta();
    return Status::OK();
  }
  if (s.ok()) s = writer.Finish();
  if (!s.ok()) {
    writer.Abandon();
    return s;
  }
  s = ctx_.fs->SyncDir(ctx_.files->dir());
  if (!s.ok()) {
    ctx_.files->Discard(writer.meta().number);
    return s;
  }
  *meta = writer.meta();
  return Status::OK();
}

Status FlushJob::Run() {
  const uint64_t start_nanos = ctx_.clock->NowNanos();
  ImmutableMemTable imm;
  // The files, which hold all the group's data older than imm (the oldest
  // memtable).
  std::unique_ptr<DeeperFiles> older;
  {
    MutexLock l(&group_->mu);
    if (group_->view->imms.empty()) return Status::OK();
    imm = group_->view->imms.back();
    older =
        std::make_unique<DeeperFiles>(*group_->view, /*first_level=*/0, ctx_.files->table_cache(),
                                      group_->tablet->table->budget->cache_id());
  }
  const TabletState& tablet = *group_->tablet;
  FileMeta meta;
  bool pinned = false;
  if (imm.mem->num_entries() > 0) {
    std::unique_ptr<InternalIterator> it = imm.mem->NewIterator();
    STRATA_RETURN_IF_ERROR(WriteFile(it.get(), older.get(), &meta));
  }
  if (meta.entries > 0) {
    Status s = ctx_.files->MakeResidentIfNeeded(*group_, meta, &pinned);
    if (!s.ok()) {
      ctx_.files->Discard(meta.number);
      return s;
    }
  }
  // Everything the manifest is about to call flushed must be durable in the
  // log too, or a crash could leave the log ending before the manifest's
  // last sequence. So `visible` is read before the sync: writes applied
  // after it may be lost in a crash, and the log floor and last sequence
  // recorded below must not reach past what the sync made durable. The
  // memtable's own entries were logged before their apply switched it out,
  // perhaps before that apply published them: the sync covers them too.
  const SequenceNumber visible =
      std::max(ctx_.visible_sequence->load(std::memory_order_acquire), imm.last_sequence);
  STRATA_RETURN_IF_ERROR(ctx_.log->Sync());
  if (auto* hook = test_hooks::after_flush_log_sync.load(std::memory_order_relaxed)) hook();
  bool recorded = false;
  bool popped = false;
  Status shown =
      ctx_.versions->InstallFlush(group_, imm, meta, pinned, visible, &recorded, &popped);
  if (!recorded) return shown;  // dropped or split away meanwhile, or the edit failed
  if (popped) tablet.table->budget->ImmutableFlushed(imm.charge);
  ctx_.flushes->fetch_add(1, std::memory_order_relaxed);
  ctx_.bytes_written->fetch_add(meta.size, std::memory_order_relaxed);
  ctx_.latency->AddNanos(ctx_.clock->NowNanos() - start_nanos);
  STRATA_RETURN_IF_ERROR(shown);
  // The manifest now says what the log no longer has to hold.
  const SequenceNumber floor = ctx_.versions->LogFloor(visible);
  STRATA_RETURN_IF_ERROR(ctx_.versions->RaiseLogFloor(floor));
  return ctx_.log->ReleaseBefore(floor);
}

}  // namespace strata::engine
