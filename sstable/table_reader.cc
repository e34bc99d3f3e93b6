// Reads the layout of sstable/FORMAT.md.
#include "sstable/table_reader.h"

#include <algorithm>
#include <cstring>

#include "common/cell_key.h"
#include "common/coding.h"

namespace strata::sstable {

// Two-level iteration: the index block picks the data block, whose own
// iterator yields the cells.
class TableReader::Iter final : public InternalIterator {
 public:
  Iter(const TableReader* table, bool fill_cache, std::shared_ptr<CacheFillBudget> fill_budget)
      : table_(table),
        fill_cache_(fill_cache),
        fill_budget_(std::move(fill_budget)),
        index_iter_(table->index_.get()) {}

  bool Valid() const override { return valid_; }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    index_iter_.SeekToFirst();
    InitDataBlock();
    if (data_iter_) data_iter_->SeekToFirst();
    SkipEmptyBlocksForward();
  }

  void Seek(const Slice& target) override {
    if (!status_.ok()) return;
    SeekIndex(target);
    InitDataBlock();
    if (data_iter_) data_iter_->Seek(target);
    SkipEmptyBlocksForward();
  }

  void SeekBefore(const Slice& target) override {
    if (!status_.ok()) return;
    valid_ = false;
    // The first block whose separator is >= target holds every key below
    // the target that the blocks before it do not; with none, the last
    // block holds the last key.
    SeekIndex(target);
    if (!index_iter_.Valid()) {
      if (!index_iter_.status().ok()) {
        InitDataBlock();  // reports the index's damage
        return;
      }
      index_iter_.SeekToLast();
    }
    for (;;) {
      InitDataBlock();
      if (!data_iter_) return;  // no blocks, or an error
      data_iter_->SeekBefore(target);
      if (data_iter_->Valid()) break;
      if (!data_iter_->status().ok()) {
        Fail(BlockCorruption(table_->file_name_, BlockKind::kData, data_offset_,
                             std::string(data_iter_->status().message())));
        return;
      }
      // Nothing below the target here: the block before (one index entry
      // per restart, so the entry before is the last one below this one's).
      separator_.assign(index_iter_.key().data(), index_iter_.key().size());
      index_iter_.SeekBefore(separator_);
      if (!index_iter_.Valid()) {
        if (!index_iter_.status().ok()) InitDataBlock();
        ClearData();
        return;
      }
    }
    valid_ = true;
  }

  void Next() override {
    if (!valid_) return;
    data_iter_->Next();
    // Most steps stay inside the block.
    if (data_iter_->Valid()) return;
    SkipEmptyBlocksForward();
  }

  Slice key() const override { return data_iter_->key(); }
  Slice value() const override { return data_iter_->value(); }
  Status status() const override { return status_; }

 private:
  // Positions the index at the first data block whose separator is >= target.
  void SeekIndex(const Slice& target) {
    if (table_->index_windows_.empty()) {
      index_iter_.Seek(target);
    } else {
      index_iter_.SeekToRestartPoint(table_->FindIndexEntry(target, &index_iter_));
    }
  }

  void ClearData() {
    valid_ = false;
    data_iter_.reset();
    owned_.reset();
    cached_.Reset();
    data_offset_ = UINT64_MAX;
  }

  void Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    ClearData();
  }

  // Positions data_iter_ on the block the index iterator points at.
  void InitDataBlock() {
    if (!index_iter_.Valid()) {
      if (!index_iter_.status().ok()) {
        Fail(BlockCorruption(table_->file_name_, BlockKind::kIndex, table_->footer_.index.offset,
                             std::string(index_iter_.status().message())));
      } else {
        ClearData();
      }
      return;
    }
    BlockHandle handle;
    Slice v = index_iter_.value();
    if (!handle.DecodeFrom(&v) || !v.empty() || !handle.FitsBelow(table_->DataEnd())) {
      Fail(BlockCorruption(table_->file_name_, BlockKind::kIndex, table_->footer_.index.offset,
                           "bad data block handle in entry " + HexBytes(index_iter_.key())));
      return;
    }
    if (data_iter_ && handle.offset == data_offset_) return;
    ClearData();
    std::unique_ptr<Block> owned;
    BlockCache::Handle cached;
    Status s = table_->GetDataBlock(handle, fill_cache_, fill_budget_.get(), &cached, &owned);
    if (!s.ok()) {
      Fail(std::move(s));
      return;
    }
    owned_ = std::move(owned);
    cached_ = std::move(cached);
    data_iter_.emplace(owned_ ? owned_.get() : cached_.block());
    data_offset_ = handle.offset;
  }

  // Ends every move: from an exhausted block on to the first entry of the
  // next non-empty one, and sets valid_.
  void SkipEmptyBlocksForward() {
    while (status_.ok() && (!data_iter_ || !data_iter_->Valid())) {
      if (data_iter_ && !data_iter_->status().ok()) {
        Fail(BlockCorruption(table_->file_name_, BlockKind::kData, data_offset_,
                             std::string(data_iter_->status().message())));
        return;
      }
      if (!index_iter_.Valid()) {
        ClearData();
        return;
      }
      index_iter_.Next();
      InitDataBlock();
      if (data_iter_) data_iter_->SeekToFirst();
    }
    valid_ = status_.ok() && data_iter_ && data_iter_->Valid();
  }

  const TableReader* const table_;
  const bool fill_cache_;
  const std::shared_ptr<CacheFillBudget> fill_budget_;  // may be null
  Block::Iter index_iter_;
  BlockCache::Handle cached_;     // pins the current block when cached
  std::unique_ptr<Block> owned_;  // holds it otherwise
  std::optional<Block::Iter> data_iter_;
  uint64_t data_offset_ = UINT64_MAX;
  // status_ is OK and data_iter_ stands on an entry.
  bool valid_ = false;
  std::string separator_;  // SeekBefore's copy of an index key
  Status status_;
};

TableReader::TableReader(const TableReaderOptions& options, std::unique_ptr<RandomAccessFile> file,
                         uint64_t file_size, std::string file_name)
    : options_(options),
      file_(std::move(file)),
      file_size_(file_size),
      file_name_(std::move(file_name)) {}

TableReader::~TableReader() = default;

Result<std::unique_ptr<TableReader>> TableReader::Open(const TableReaderOptions& options,
                                                       std::unique_ptr<RandomAccessFile> file,
                                                       uint64_t file_size, std::string file_name) {
  std::unique_ptr<TableReader> t(
      new TableReader(options, std::move(file), file_size, std::move(file_name)));
  STRATA_RETURN_IF_ERROR(t->Init());
  return t;
}

uint64_t TableReader::DataEnd() const {
  const bool no_filter = footer_.filter.offset == 0 && footer_.filter.size == 0;
  return no_filter ? footer_.index.offset : footer_.filter.offset;
}

Status TableReader::Init() {
  Result<Footer> footer = Footer::Read(*file_, file_size_, file_name_);
  if (!footer.ok()) return footer.status();
  footer_ = *footer;
  const uint64_t footer_offset = file_size_ - Footer::kEncodedLength;

  const bool has_filter_block = !(footer_.filter.offset == 0 && footer_.filter.size == 0);
  struct Check {
    BlockKind kind;
    const BlockHandle* h;
  };
  for (const Check& c : {Check{BlockKind::kFilter, &footer_.filter},
                         Check{BlockKind::kIndex, &footer_.index},
                         Check{BlockKind::kProperties, &footer_.properties}}) {
    if (c.kind == BlockKind::kFilter && !has_filter_block) continue;
    if (!c.h->FitsBelow(footer_offset)) {
      return Status::Corruption("file " + file_name_ + ": footer at offset " +
                                std::to_string(footer_offset) + ": " + BlockKindName(c.kind) +
                                " block handle (offset " + std::to_string(c.h->offset) +
                                ", size " + std::to_string(c.h->size) +
                                ") points past the end of the blocks");
    }
  }

  BlockContents contents;
  STRATA_RETURN_IF_ERROR(ReadBlock(*file_, file_name_, BlockKind::kIndex, footer_.index, &contents));
  Result<std::unique_ptr<Block>> index = Block::Parse(std::move(contents.data));
  if (!index.ok()) {
    return BlockCorruption(file_name_, BlockKind::kIndex, footer_.index.offset,
                           std::string(index.status().message()));
  }
  index_ = std::move(*index);
  BuildIndexWindows();

  STRATA_RETURN_IF_ERROR(
      ReadBlock(*file_, file_name_, BlockKind::kProperties, footer_.properties, &contents));
  Result<TableProperties> props = TableProperties::Decode(contents.data);
  if (!props.ok()) {
    return BlockCorruption(file_name_, BlockKind::kProperties, footer_.properties.offset,
                           std::string(props.status().message()));
  }
  properties_ = std::move(*props);
  if (properties_.format_version != footer_.format_version) {
    return BlockCorruption(file_name_, BlockKind::kProperties, footer_.properties.offset,
                           "format_version " + std::to_string(properties_.format_version) +
                               " differs from the footer's " +
                               std::to_string(footer_.format_version));
  }

  if (has_filter_block) {
    STRATA_RETURN_IF_ERROR(
        ReadBlock(*file_, file_name_, BlockKind::kFilter, footer_.filter, &contents));
    Result<FilterBlockReader> filter = FilterBlockReader::Parse(
        std::move(contents.data),
        footer_.format_version == kFormatVersion1 ? BloomLayout::kFlat : BloomLayout::kBlocked);
    if (!filter.ok()) {
      return BlockCorruption(file_name_, BlockKind::kFilter, footer_.filter.offset,
                             std::string(filter.status().message()));
    }
    filter_ = std::move(*filter);
  }
  file_number_ = options_.file_number != 0 ? options_.file_number : properties_.file_number;
  return Status::OK();
}

namespace {

// Bytes [from, from + 8) of `s`, zero-padded, as a big-endian integer.
inline uint64_t WindowAt(const Slice& s, size_t from) {
  char buf[8] = {};
  if (from < s.size()) std::memcpy(buf, s.data() + from, std::min<size_t>(8, s.size() - from));
  return DecodeBigEndian64(buf);
}

}  // namespace

void TableReader::BuildIndexWindows() {
  // The last separator is left out: it is a short successor of the table's
  // last key ("1" for a table of rows "0..."), which would leave the others
  // no common prefix to skip.
  Block::Iter it(index_.get());
  uint32_t count = 0;
  for (it.SeekToFirst(); it.Valid(); it.Next()) count++;
  if (!it.status().ok() || count < 2 || count != index_->num_restarts()) return;
  it.SeekToRestartPoint(0);
  const std::string first = it.key().ToString();
  it.SeekToRestartPoint(count - 2);
  const std::string before_last = it.key().ToString();
  it.SeekToRestartPoint(count - 1);
  index_last_ = it.key().ToString();
  size_t prefix = 0;
  while (prefix < first.size() && prefix < before_last.size() &&
         first[prefix] == before_last[prefix]) {
    prefix++;
  }
  index_prefix_ = first.substr(0, prefix);
  index_windows_.reserve(count - 1);
  it.SeekToFirst();
  for (uint32_t i = 0; i + 1 < count && it.Valid(); i++, it.Next()) {
    index_windows_.push_back(WindowAt(it.key(), prefix));
  }
}

uint32_t TableReader::FindIndexEntry(const Slice& target, Block::Iter* it) const {
  // Windows cover every separator but the last, which is checked on its own.
  const uint32_t m = static_cast<uint32_t>(index_windows_.size());
  const uint32_t past_windows = target.compare(index_last_) <= 0 ? m : m + 1;
  const size_t p = index_prefix_.size();
  const int c = std::memcmp(target.data(), index_prefix_.data(), std::min(p, target.size()));
  if (c < 0 || (c == 0 && target.size() < p)) return 0;  // below every windowed separator
  if (c > 0) return past_windows;                        // above every windowed separator
  // Separators with a smaller window are < target, with a larger one > target
  // (a shorter separator's zero padding sorts below any byte a longer one
  // has there); equal windows are settled by the separators themselves.
  const uint64_t w = WindowAt(target, p);
  uint32_t lo = static_cast<uint32_t>(
      std::lower_bound(index_windows_.begin(), index_windows_.end(), w) - index_windows_.begin());
  if (lo < m && index_windows_[lo] == w) {
    uint32_t hi = static_cast<uint32_t>(
        std::upper_bound(index_windows_.begin() + lo, index_windows_.end(), w) -
        index_windows_.begin());
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      it->SeekToRestartPoint(mid);
      if (!it->Valid()) return mid;  // the damage shows in the iterator's status
      if (it->key().compare(target) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
  }
  return lo < m ? lo : past_windows;
}

std::unique_ptr<InternalIterator> TableReader::NewIterator(
    bool fill_cache, std::shared_ptr<CacheFillBudget> fill_budget) const {
  return std::make_unique<Iter>(this, fill_cache, std::move(fill_budget));
}

bool TableReader::RowPrefixMayMatch(const Slice& row_prefix) const {
  return !filter_ || filter_->RowMayMatch(row_prefix);
}

bool TableReader::ColumnPrefixMayMatch(const Slice& column_prefix) const {
  return !filter_ || filter_->ColumnMayMatch(column_prefix);
}

bool TableReader::RowMayMatch(const Slice& row) const {
  if (!filter_) return true;
  std::string prefix;
  AppendRowPrefix(&prefix, row);
  return filter_->RowMayMatch(prefix);
}

bool TableReader::ColumnMayMatch(const Slice& row, uint16_t family,
                                 const Slice& qualifier) const {
  if (!filter_) return true;
  std::string prefix;
  AppendColumnPrefix(&prefix, row, family, qualifier);
  return filter_->ColumnMayMatch(prefix);
}

Status TableReader::GetDataBlock(const BlockHandle& handle, bool fill_cache,
                                 CacheFillBudget* fill_budget, BlockCache::Handle* cached,
                                 std::unique_ptr<Block>* owned) const {
  BlockCache* cache = options_.block_cache;
  const BlockCache::Key key{file_number_, handle.offset};
  const BlockCache::Priority priority =
      options_.resident_blocks ? BlockCache::Priority::kResident : BlockCache::Priority::kNormal;
  if (cache != nullptr) {
    *cached = cache->Lookup(key, priority);
    if (*cached) return Status::OK();
  }
  BlockMemory data;
  size_t size = 0;
  STRATA_RETURN_IF_ERROR(ReadBlock(*file_, file_name_, BlockKind::kData, handle, &data, &size));
  Result<std::unique_ptr<Block>> block = Block::Parse(std::move(data), size, data_key_encoding());
  if (!block.ok()) {
    return BlockCorruption(file_name_, BlockKind::kData, handle.offset,
                           std::string(block.status().message()));
  }
  const size_t charge = (*block)->memory_usage();
  // A resident table (an in-memory group) keeps every block, budget or not.
  const bool over_budget =
      fill_budget != nullptr && !options_.resident_blocks && !fill_budget->Take(charge);
  if (cache == nullptr || !fill_cache || over_budget) {
    *owned = std::move(*block);
    return Status::OK();
  }
  *cached = cache->Insert(key, std::move(*block), charge, options_.owner, priority);
  return Status::OK();
}

uint64_t TableReader::ApproximateOffsetOf(const Slice& key) const {
  auto it = index_->NewIterator();
  it->Seek(key);
  if (it->Valid()) {
    BlockHandle h;
    Slice v = it->value();
    if (h.DecodeFrom(&v)) return h.offset;
  }
  return DataEnd();
}

Status TableReader::ListBlocks(std::vector<BlockInfo>* blocks) const {
  blocks->clear();
  auto it = index_->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    BlockInfo info{BlockKind::kData, {}, it->key().ToString()};
    Slice v = it->value();
    if (!info.handle.DecodeFrom(&v) || !v.empty()) {
      return BlockCorruption(file_name_, BlockKind::kIndex, footer_.index.offset,
                             "bad data block handle in entry " + HexBytes(it->key()));
    }
    blocks->push_back(std::move(info));
  }
  if (!it->status().ok()) {
    return BlockCorruption(file_name_, BlockKind::kIndex, footer_.index.offset,
                           std::string(it->status().message()));
  }
  if (has_filter()) blocks->push_back(BlockInfo{BlockKind::kFilter, footer_.filter, {}});
  blocks->push_back(BlockInfo{BlockKind::kIndex, footer_.index, {}});
  blocks->push_back(BlockInfo{BlockKind::kProperties, footer_.properties, {}});
  return Status::OK();
}

Status TableReader::VerifyChecksums() const {
  std::vector<BlockInfo> blocks;
  STRATA_RETURN_IF_ERROR(ListBlocks(&blocks));
  std::string prev_key;
  uint64_t cells = 0;
  uint64_t expected_offset = 0;
  for (const BlockInfo& b : blocks) {
    if (b.handle.offset != expected_offset) {
      return BlockCorruption(file_name_, b.kind, b.handle.offset,
                             "block does not start where the previous one ends (" +
                                 std::to_string(expected_offset) + ")");
    }
    expected_offset = b.handle.end();
    BlockContents contents;
    STRATA_RETURN_IF_ERROR(ReadBlockContents(b.kind, b.handle, &contents));
    if (b.kind != BlockKind::kData) continue;
    Result<std::unique_ptr<Block>> block =
        Block::Parse(std::move(contents.data), data_key_encoding());
    if (!block.ok()) {
      return BlockCorruption(file_name_, b.kind, b.handle.offset,
                             std::string(block.status().message()));
    }
    auto it = (*block)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (cells > 0 && Slice(prev_key).compare(it->key()) >= 0) {
        return BlockCorruption(file_name_, b.kind, b.handle.offset,
                               "keys out of order: " + HexBytes(it->key()) + " after " +
                                   HexBytes(prev_key));
      }
      if (it->key().compare(b.separator) > 0) {
        return BlockCorruption(file_name_, b.kind, b.handle.offset,
                               "key " + HexBytes(it->key()) + " beyond the index separator " +
                                   HexBytes(b.separator));
      }
      prev_key = it->key().ToString();
      cells++;
    }
    if (!it->status().ok()) {
      return BlockCorruption(file_name_, b.kind, b.handle.offset,
                             std::string(it->status().message()));
    }
  }
  if (expected_offset != file_size_ - Footer::kEncodedLength) {
    return Status::Corruption("file " + file_name_ + ": blocks end at offset " +
                              std::to_string(expected_offset) + " but the footer starts at " +
                              std::to_string(file_size_ - Footer::kEncodedLength));
  }
  if (cells != properties_.num_cells) {
    return BlockCorruption(file_name_, BlockKind::kProperties, footer_.properties.offset,
                           "says " + std::to_string(properties_.num_cells) +
                               " cells but the data blocks hold " + std::to_string(cells));
  }
  return Status::OK();
}

Status TableReader::ReadBlockContents(BlockKind kind, const BlockHandle& handle,
                                      BlockContents* out) const {
  if (!handle.FitsBelow(file_size_)) {
    return BlockCorruption(file_name_, kind, handle.offset,
                           "block of " + std::to_string(handle.size) +
                               " bytes extends past the end of the file");
  }
  return ReadBlock(*file_, file_name_, kind, handle, out);
}

Status TableReader::ReadRawBlock(const BlockHandle& handle, std::string* out) const {
  if (!handle.FitsBelow(file_size_)) {
    return Status::InvalidArgument("file " + file_name_ + ": no block of " +
                                   std::to_string(handle.size) + " bytes at offset " +
                                   std::to_string(handle.offset));
  }
  const size_t n = static_cast<size_t>(handle.size + kBlockTrailerSize);
  out->resize(n);
  Slice got;
  STRATA_RETURN_IF_ERROR(file_->Read(handle.offset, n, &got, out->data()));
  if (got.data() != out->data()) std::memmove(out->data(), got.data(), got.size());
  out->resize(got.size());
  return Status::OK();
}

}  // namespace strata::sstable
