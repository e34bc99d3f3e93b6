#include "engine/table_file_writer.h"

#include <algorithm>

#include "sstable/table_cache.h"

namespace strata::engine {

namespace {

// A file whose appends wait on a rate limiter (compaction output).
class RateLimitedFile final : public WritableFile {
 public:
  RateLimitedFile(std::unique_ptr<WritableFile> base, RateLimiter* limiter)
      : base_(std::move(base)), limiter_(limiter) {}
  Status Append(const Slice& data) override {
    limiter_->Request(data.size());
    return base_->Append(data);
  }
  Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) override {
    for (int i = 0; i < iovcnt; i++) limiter_->Request(iov[i].iov_len);
    return base_->WriteAt(offset, iov, iovcnt);
  }
  Status Flush() override { return base_->Flush(); }
  Status Sync() override { return base_->Sync(); }
  Status Allocate(uint64_t offset, uint64_t len) override { return base_->Allocate(offset, len); }
  Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

 private:
  const std::unique_ptr<WritableFile> base_;
  RateLimiter* const limiter_;
};

}  // namespace

CompactionFilter::Context FilterContextFor(const TabletState& tablet,
                                           const LocalityGroupOptions& group_options,
                                           bool bottommost) {
  CompactionFilter::Context ctx;
  ctx.tablet_id = tablet.id;
  ctx.table = tablet.table->name;
  ctx.locality_group = group_options.name;
  ctx.bottommost = bottommost;
  return ctx;
}

TableFileWriter::TableFileWriter(FileSystem* fs, std::string dir, RateLimiter* limiter)
    : fs_(fs), dir_(std::move(dir)), limiter_(limiter) {}

Status TableFileWriter::Open(uint64_t number, const TabletState& tablet, uint32_t group,
                             const LocalityGroupOptions& group_options) {
  meta_ = FileMeta();
  meta_.number = number;
  meta_.min_sequence = kMaxSequenceNumber;
  path_ = sstable::TableFileName(dir_, number);
  STRATA_RETURN_IF_ERROR(fs_->NewWritableFile(path_, FileOpenOptions(), &file_));
  if (limiter_ != nullptr) file_ = std::make_unique<RateLimitedFile>(std::move(file_), limiter_);
  sstable::TableBuilderOptions bo = sstable::TableBuilderOptions::FromLocalityGroup(group_options);
  bo.table_id = tablet.table->id;
  bo.tablet_id = tablet.id;
  bo.locality_group_id = group;
  bo.file_number = number;
  builder_ = std::make_unique<sstable::TableBuilder>(bo, file_.get(), path_);
  return Status::OK();
}

Status TableFileWriter::Add(const Slice& key, const Slice& value) {
  if (meta_.entries == 0) meta_.smallest.assign(key.data(), key.size());
  meta_.largest.assign(key.data(), key.size());
  const SequenceNumber seq = CellKeySequence(key);
  meta_.min_sequence = std::min(meta_.min_sequence, seq);
  meta_.max_sequence = std::max(meta_.max_sequence, seq);
  meta_.entries++;
  return builder_->Add(key, value);
}

Status TableFileWriter::Finish() {
  Status s = builder_->Finish();
  if (s.ok()) s = file_->Sync();
  if (s.ok()) s = file_->Close();
  meta_.size = builder_->FileSize();
  builder_.reset();
  file_.reset();
  if (s.ok()) path_.clear();  // the caller's now
  return s;
}

void TableFileWriter::Abandon() {
  if (builder_ != nullptr) builder_->Abandon();
  builder_.reset();
  file_.reset();
  if (!path_.empty()) {
    fs_->DeleteFile(path_).PermitUncheckedError();  // best effort; reopen deletes leftovers
    path_.clear();
  }
}

}  // namespace strata::engine
