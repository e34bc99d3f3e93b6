#include "engine/compaction_job.h"

#include <memory>
#include <string>

#include "engine/clamped_iterator.h"
#include "engine/compaction_stream.h"
#include "engine/concat_iterator.h"
#include "engine/merging_iterator.h"
#include "engine/table_file_writer.h"

namespace strata::engine {

Status CompactionJob::Run() {
  const uint64_t start_nanos = ctx_.clock->NowNanos();
  const TabletState& tablet = *c_->group->tablet;
  if (c_->trivial_move && c_->bottommost) {
    // At the bottom a rewrite drops delete markers (and what they hide in
    // the same file); move only files that hold none.
    Result<std::shared_ptr<sstable::TableReader>> reader = ctx_.files->table_cache()->Get(
        c_->inputs[0].front()->meta.number, tablet.table->budget->cache_id());
    if (!reader.ok()) return reader.status();
    const sstable::TableProperties& p = (*reader)->properties();
    if (p.num_delete_cells + p.num_delete_columns + p.num_delete_rows > 0) {
      c_->trivial_move = false;
    }
  }
  if (c_->trivial_move) return MoveDown();

  std::vector<FileMeta> outputs;
  bool pinned = false;
  STRATA_RETURN_IF_ERROR(WriteOutputs(&outputs, &pinned));
  bool installed = false;
  Status s = ctx_.versions->InstallCompaction(*c_, outputs, pinned, &installed);
  if (!installed) return s;
  ctx_.compactions->fetch_add(1, std::memory_order_relaxed);
  ctx_.latency->AddNanos(ctx_.clock->NowNanos() - start_nanos);
  uint64_t read = 0, written = 0;
  for (const auto& inputs : c_->inputs) {
    for (const auto& f : inputs) read += f->meta.size;
  }
  for (const auto& m : outputs) written += m.size;
  ctx_.bytes_read->fetch_add(read, std::memory_order_relaxed);
  ctx_.bytes_written->fetch_add(written, std::memory_order_relaxed);
  return s;
}

Status CompactionJob::MoveDown() {
  bool moved = false;
  STRATA_RETURN_IF_ERROR(ctx_.versions->InstallTrivialMove(*c_, &moved));
  if (moved) ctx_.trivial_moves->fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status CompactionJob::WriteOutputs(std::vector<FileMeta>* outputs, bool* pinned) {
  LocalityGroupState* group = c_->group;
  const TabletState& tablet = *group->tablet;
  // The job's schema: output files take the options of the group as the
  // compaction starts.
  const std::shared_ptr<const Schema> schema = tablet.table->schema();
  const LocalityGroupOptions& group_options = schema->locality_groups()[group->index];

  // Level-0 files overlap, so each is a child of the merge; the files of a
  // deeper level are disjoint and in key order, so one child reads them all
  // in turn (a merge step costs about log2 of its children).
  std::vector<std::unique_ptr<InternalIterator>> children;
  std::vector<std::shared_ptr<const void>> pins;
  const sstable::BlockCache::OwnerId owner = tablet.table->budget->cache_id();
  for (size_t i = 0; i < c_->inputs.size(); i++) {
    const int level = c_->level + static_cast<int>(i);
    if (level > 0) {
      if (!c_->inputs[i].empty()) {
        // Read once: the inputs' blocks would only evict what readers use.
        children.push_back(NewLevelIterator(c_->inputs[i], ctx_.files->table_cache(), owner,
                                            /*fill_cache=*/false));
      }
      continue;
    }
    for (const auto& f : c_->inputs[i]) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          ctx_.files->table_cache()->Get(f->meta.number, owner);
      if (!reader.ok()) return reader.status();
      children.push_back((*reader)->NewIterator(/*fill_cache=*/false));
      pins.push_back(std::move(reader.value()));
    }
  }
  std::unique_ptr<InternalIterator> input =
      NewMergingIterator(std::move(children), std::move(pins));
  if (!tablet.start_row.empty() || !tablet.end_row.empty()) {
    // Files shared with split siblings hold their rows too.
    input = std::make_unique<ClampedIterator>(std::move(input), RowBound(tablet.start_row),
                                              RowBound(tablet.end_row));
  }

  // Output files, cut at about target_file_size. Outputs end only between
  // rows, so the files of a level never share a row and a compaction that
  // takes a file takes all of each of its rows. Past half the target size an
  // output also ends where a file of the level below ends: an output that
  // straddled that boundary would later drag both files below into its
  // compaction.
  TableFileWriter writer(ctx_.fs, ctx_.files->dir(), ctx_.limiter);
  const uint64_t target = ctx_.options->target_file_size;
  const std::vector<std::string>& ends = c_->next_level_ends;
  size_t next_end = 0;  // the first of `ends` at or after the last key emitted
  bool cut_pending = false;
  auto emit = [&](const Slice& key, const Slice& value) -> Status {
    bool crossed = false;
    while (next_end < ends.size() && key.compare(ends[next_end]) > 0) {
      next_end++;
      crossed = true;
    }
    if (crossed && writer.is_open() && writer.FileSize() >= target / 2) cut_pending = true;
    if (cut_pending && EncodedRowOf(writer.meta().largest) != EncodedRowOf(key)) {
      cut_pending = false;
      STRATA_RETURN_IF_ERROR(writer.Finish());
      outputs->push_back(writer.meta());
    }
    if (!writer.is_open()) {
      STRATA_RETURN_IF_ERROR(
          writer.Open(ctx_.versions->NewFileNumber(), tablet, group->index, group_options));
    }
    STRATA_RETURN_IF_ERROR(writer.Add(key, value));
    if (writer.FileSize() >= target) cut_pending = true;
    return Status::OK();
  };
  CompactionStream::RowProbe older_may_hold_row;
  if (!c_->bottommost && c_->deeper != nullptr) {
    older_may_hold_row = [deeper = c_->deeper.get()](const Slice& row) {
      return deeper->MayHoldRow(row);
    };
  }
  // Held for the job: the tenant may install another filter meanwhile.
  const std::shared_ptr<CompactionFilter> filter = CompactionFilterOf(*tablet.table, *ctx_.options);
  CompactionStream stream(c_->bottommost, filter.get(),
                          FilterContextFor(tablet, group_options, c_->bottommost), schema.get(),
                          emit, std::move(older_may_hold_row));
  Status s;
  for (input->SeekToFirst(); input->Valid() && s.ok(); input->Next()) {
    // Relaxed: a hint to stop early; Close joins this thread afterwards.
    if (ctx_.closing->load(std::memory_order_relaxed)) {
      s = Status::Aborted("compaction stopped: the engine is closing");
      break;
    }
    s = stream.Add(input->key(), input->value());
  }
  if (s.ok()) s = input->status();
  if (s.ok()) s = stream.Finish();
  if (s.ok() && writer.is_open()) {
    s = writer.Finish();
    if (s.ok()) outputs->push_back(writer.meta());
  }
  if (s.ok()) s = ctx_.fs->SyncDir(ctx_.files->dir());
  // All outputs or none: `resident` is read once, since an AlterTable
  // turning it on between two outputs would leave the earlier ones unpinned
  // (ShowNewFiles pins the files only when none of them is pinned).
  {
    MutexLock l(&group->mu);
    *pinned = group->resident;
  }
  for (size_t i = 0; i < outputs->size() && s.ok() && *pinned; i++) {
    s = ctx_.files->MakeResident(*tablet.table, (*outputs)[i].number);
  }
  if (!s.ok()) {
    writer.Abandon();
    for (const FileMeta& m : *outputs) ctx_.files->Discard(m.number);  // pinned, if resident
    outputs->clear();
  }
  return s;
}

}  // namespace strata::engine
