// Writes the layout of sstable/FORMAT.md.
#include "sstable/table_builder.h"

#include <zstd.h>

#include <algorithm>
#include <chrono>

#include "common/cell_key.h"
#include "common/coding.h"

namespace strata::sstable {

TableBuilderOptions TableBuilderOptions::FromLocalityGroup(const LocalityGroupOptions& lg) {
  TableBuilderOptions o;
  o.compression =
      lg.compression == Compression::kZstd ? CompressionType::kZstd : CompressionType::kNone;
  o.compression_level = lg.compression_level;
  o.block_size = lg.block_size;
  o.bloom_bits_per_key = lg.bloom_bits_per_key;
  return o;
}

bool CellKeyPrefixLengths(const Slice& key, size_t* row_len, size_t* column_len) {
  Slice in = key;
  if (!SkipMemcomparable(&in)) return false;
  *row_len = key.size() - in.size();
  if (in.size() < 2) return false;
  in.remove_prefix(2);
  if (!SkipMemcomparable(&in)) return false;
  if (in.size() != 16) return false;
  *column_len = key.size() - 16;
  const uint8_t type = static_cast<uint8_t>(CellKeyTag(key) & 0xff);
  return type >= 1 && type <= kMaxCellType;
}

std::string ShortestSeparator(const Slice& start, const Slice& limit) {
  const size_t min_len = std::min(start.size(), limit.size());
  size_t i = 0;
  while (i < min_len && start[i] == limit[i]) i++;
  if (i == start.size()) return start.ToString();  // start is a prefix of limit
  const auto sb = static_cast<uint8_t>(start[i]);
  const auto lb = static_cast<uint8_t>(limit[i]);
  if (sb + 1 < lb) {
    std::string s(start.data(), i);
    s.push_back(static_cast<char>(sb + 1));
    return s;
  }
  // limit[i] == start[i] + 1.
  if (limit.size() > i + 1) return std::string(limit.data(), i + 1);
  for (size_t j = i + 1; j < start.size(); j++) {
    const auto b = static_cast<uint8_t>(start[j]);
    if (b != 0xff) {
      std::string s(start.data(), j);
      s.push_back(static_cast<char>(b + 1));
      return s;
    }
  }
  return start.ToString();
}

std::string ShortSuccessor(const Slice& key) {
  for (size_t i = 0; i < key.size(); i++) {
    const auto b = static_cast<uint8_t>(key[i]);
    if (b != 0xff) {
      std::string s(key.data(), i);
      s.push_back(static_cast<char>(b + 1));
      return s;
    }
  }
  return key.ToString();
}

TableBuilder::TableBuilder(const TableBuilderOptions& options, WritableFile* file,
                           std::string file_name)
    : options_(options),
      file_(file),
      file_name_(std::move(file_name)),
      data_block_(std::max(1, options.restart_interval),
                  IsKnownFormatVersion(options.format_version)
                      ? DataKeyEncoding(options.format_version)
                      : KeyEncoding::kWholeKey),
      index_block_(1) {
  if (!IsKnownFormatVersion(options_.format_version)) {
    status_ =
        Status::InvalidArgument("file " + file_name_ + ": cannot write SSTable format version " +
                                std::to_string(options_.format_version));
  }
  if (options_.compression == CompressionType::kZstd) zstd_cctx_ = ZSTD_createCCtx();
  if (options_.bloom_bits_per_key > 0) {
    const bool v1 = options_.format_version == kFormatVersion1;
    filter_ = std::make_unique<FilterBlockBuilder>(options_.bloom_bits_per_key,
                                                   v1 ? BloomLayout::kFlat : BloomLayout::kBlocked,
                                                   /*omit_single_columns=*/!v1);
  }
  props_.format_version = options_.format_version;
  props_.table_id = options_.table_id;
  props_.tablet_id = options_.tablet_id;
  props_.locality_group_id = options_.locality_group_id;
  props_.file_number = options_.file_number;
  props_.creation_time = options_.creation_time;
  if (props_.creation_time == 0) {
    props_.creation_time = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
  }
  props_.compression = static_cast<uint8_t>(options_.compression);
  props_.compression_level = options_.compression_level;
  props_.block_size = options_.block_size;
  props_.restart_interval = static_cast<uint32_t>(std::max(1, options_.restart_interval));
  props_.bloom_bits_per_key = static_cast<uint32_t>(std::max(0, options_.bloom_bits_per_key));
  props_.has_family_ids = true;
}

TableBuilder::~TableBuilder() {
  if (zstd_cctx_ != nullptr) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_cctx_));
}

void TableBuilder::AddIndexEntry(const Slice& separator) {
  std::string handle;
  pending_handle_.EncodeTo(&handle);
  index_block_.Add(separator, handle);
  pending_index_entry_ = false;
}

Status TableBuilder::Add(const Slice& key, const Slice& value) {
  if (closed_) return Status::FailedPrecondition("file " + file_name_ + ": Add after Finish");
  if (!status_.ok()) return status_;
  size_t row_len, column_len;
  if (!CellKeyPrefixLengths(key, &row_len, &column_len)) {
    return Status::InvalidArgument("file " + file_name_ + ": not a cell key: " + HexBytes(key));
  }
  if (props_.num_cells > 0 && Slice(last_key_).compare(key) >= 0) {
    return Status::InvalidArgument("file " + file_name_ + ": key " + CellKeyDebugString(key) +
                                   " is not after the previous key " +
                                   CellKeyDebugString(last_key_));
  }
  // Entry framing: three varint32 lengths, a restart offset, the restart
  // count.
  const uint64_t entry_bytes = uint64_t{key.size()} + value.size() + 3 * 5 + 4 + 4;
  if (entry_bytes > kMaxEntryBytes) {
    return Status::InvalidArgument(
        "file " + file_name_ + ": a cell of " + std::to_string(key.size()) + " key and " +
        std::to_string(value.size()) + " value bytes does not fit in a block (at most " +
        std::to_string(kMaxEntryBytes) + " bytes)");
  }
  // A reader refuses a block past kMaxBlockSize: cut this one first.
  if (!data_block_.empty() && data_block_.CurrentSizeEstimate() + entry_bytes > kMaxEntryBytes) {
    STRATA_RETURN_IF_ERROR(FlushDataBlock());
  }

  if (pending_index_entry_) AddIndexEntry(ShortestSeparator(last_key_, key));

  const bool first = props_.num_cells == 0;
  const bool new_row =
      first || row_len != last_row_len_ || std::memcmp(key.data(), last_key_.data(), row_len) != 0;
  const bool new_column = new_row || column_len != last_key_.size() - 16 ||
                          std::memcmp(key.data(), last_key_.data(), column_len) != 0;
  if (new_row) {
    props_.num_rows++;
    if (filter_) filter_->AddRow(Slice(key.data(), row_len));
  }
  if (new_column) {
    props_.num_columns++;
    if (filter_) filter_->AddColumn(Slice(key.data(), column_len));
    // Families change only between columns; a table holds few of them.
    const uint16_t family = DecodeBigEndian16(key.data() + row_len);
    std::vector<uint16_t>& ids = props_.family_ids;
    auto pos = std::lower_bound(ids.begin(), ids.end(), family);
    if (pos == ids.end() || *pos != family) ids.insert(pos, family);
  }

  const uint64_t ts = CellKeyTimestamp(key);
  const SequenceNumber seq = CellKeySequence(key);
  if (first) {
    props_.min_timestamp = props_.max_timestamp = ts;
    props_.min_sequence = props_.max_sequence = seq;
    props_.smallest_key = key.ToString();
    Slice in = key;
    (void)GetMemcomparable(&in, &props_.first_row);  // checked by CellKeyPrefixLengths
  } else {
    props_.min_timestamp = std::min(props_.min_timestamp, ts);
    props_.max_timestamp = std::max(props_.max_timestamp, ts);
    props_.min_sequence = std::min(props_.min_sequence, seq);
    props_.max_sequence = std::max(props_.max_sequence, seq);
  }
  switch (CellKeyType(key)) {
    case CellType::kPut:
      props_.num_puts++;
      break;
    case CellType::kDeleteCell:
      props_.num_delete_cells++;
      break;
    case CellType::kDeleteColumn:
      props_.num_delete_columns++;
      break;
    case CellType::kDeleteRow:
      props_.num_delete_rows++;
      break;
  }
  props_.num_cells++;
  props_.raw_key_size += key.size();
  props_.raw_value_size += value.size();

  data_block_.Add(key, value);
  last_key_.assign(key.data(), key.size());
  last_row_len_ = row_len;
  if (data_block_.CurrentSizeEstimate() >= options_.block_size) return FlushDataBlock();
  return Status::OK();
}

Status TableBuilder::WriteBlock(const Slice& raw, BlockKind kind, CompressionType compression,
                                BlockHandle* handle) {
  block_buf_.clear();
  EncodeBlock(raw, kind, compression, options_.compression_level, zstd_cctx_, &block_buf_);
  handle->offset = offset_;
  handle->size = block_buf_.size() - kBlockTrailerSize;
  Status s = file_->Append(block_buf_);
  if (!s.ok()) {
    status_ = s.WithContext("file " + file_name_ + ": writing " + BlockKindName(kind) +
                            " block at offset " + std::to_string(offset_));
    return status_;
  }
  offset_ += block_buf_.size();
  return Status::OK();
}

Status TableBuilder::FlushDataBlock() {
  if (data_block_.empty()) return Status::OK();
  Slice raw = data_block_.Finish();
  STRATA_RETURN_IF_ERROR(
      WriteBlock(raw, BlockKind::kData, options_.compression, &pending_handle_));
  props_.num_data_blocks++;
  props_.data_size += pending_handle_.size + kBlockTrailerSize;
  pending_index_entry_ = true;
  data_block_.Reset();
  return Status::OK();
}

Status TableBuilder::Finish() {
  if (closed_) return Status::FailedPrecondition("file " + file_name_ + ": Finish called twice");
  if (!status_.ok()) return status_;
  closed_ = true;
  STRATA_RETURN_IF_ERROR(FlushDataBlock());
  if (pending_index_entry_) AddIndexEntry(ShortSuccessor(last_key_));
  if (props_.num_cells > 0) {
    props_.largest_key = last_key_;
    Slice in = last_key_;
    (void)GetMemcomparable(&in, &props_.last_row);  // well-formed: checked by Add
  }

  Footer footer;
  footer.format_version = options_.format_version;
  if (filter_) {
    std::string contents = filter_->Finish();
    STRATA_RETURN_IF_ERROR(
        WriteBlock(contents, BlockKind::kFilter, CompressionType::kNone, &footer.filter));
    props_.filter_size = footer.filter.size + kBlockTrailerSize;
  }
  STRATA_RETURN_IF_ERROR(
      WriteBlock(index_block_.Finish(), BlockKind::kIndex, CompressionType::kNone, &footer.index));
  props_.index_size = footer.index.size + kBlockTrailerSize;

  std::string props;
  props_.EncodeTo(&props);
  STRATA_RETURN_IF_ERROR(
      WriteBlock(props, BlockKind::kProperties, CompressionType::kNone, &footer.properties));

  std::string tail;
  footer.EncodeTo(&tail);
  Status s = file_->Append(tail);
  if (s.ok()) s = file_->Flush();
  if (!s.ok()) {
    status_ = s.WithContext("file " + file_name_ + ": writing footer at offset " +
                            std::to_string(offset_));
    return status_;
  }
  offset_ += tail.size();
  return Status::OK();
}

void TableBuilder::Abandon() { closed_ = true; }

}  // namespace strata::sstable
