#include "engine/compaction_stream.h"

#include <algorithm>

#include "common/cell_key.h"
#include "common/coding.h"

namespace strata::engine {

CompactionStream::CompactionStream(bool bottommost, CompactionFilter* filter,
                                   CompactionFilter::Context context, const Schema* schema,
                                   Emit emit, RowProbe older_may_hold_row)
    : bottommost_(bottommost),
      older_may_hold_row_(std::move(older_may_hold_row)),
      filter_(filter),
      context_(context),
      schema_(schema),
      emit_(std::move(emit)) {}

bool CompactionStream::HiddenByRow(uint64_t timestamp, SequenceNumber sequence) const {
  for (const auto& m : row_markers_) {
    if (m.timestamp >= timestamp && m.sequence > sequence) return true;
  }
  return false;
}

bool CompactionStream::RowAtBottom() {
  if (bottommost_) return true;
  if (row_bottom_ == RowBottom::kUnknown) {
    row_bottom_ = older_may_hold_row_ != nullptr && !older_may_hold_row_(row_prefix_)
                      ? RowBottom::kYes
                      : RowBottom::kNo;
  }
  return row_bottom_ == RowBottom::kYes;
}

Status CompactionStream::Add(const Slice& key, const Slice& value) {
  Slice rest = key;
  if (!SkipMemcomparable(&rest) || rest.size() < 2 + 16) {
    return Status::Corruption("compaction input holds a malformed cell key " + HexBytes(key));
  }
  const Slice prefix(key.data(), key.size() - rest.size());
  if (prefix != Slice(row_prefix_)) {
    STRATA_RETURN_IF_ERROR(FlushColumn());
    row_prefix_.assign(prefix.data(), prefix.size());
    row_bottom_ = RowBottom::kUnknown;
    row_markers_.clear();
  }
  if (DecodeBigEndian16(rest.data()) == kRowMarkerFamily) {
    if (CellKeyType(key) == CellType::kDeleteRow) {
      row_markers_.push_back({CellKeyTimestamp(key), CellKeySequence(key)});
    }
    if (RowAtBottom()) {
      dropped_++;
      return Status::OK();
    }
    return emit_(key, value);
  }
  if (column_size_ > 0 && CellKeyColumn(column_.front().key) != CellKeyColumn(key)) {
    STRATA_RETURN_IF_ERROR(FlushColumn());
  }
  if (column_size_ == 0) column_family_ = DecodeBigEndian16(rest.data());
  if (column_size_ == column_.size()) column_.emplace_back();
  Entry& e = column_[column_size_++];
  e.key.assign(key.data(), key.size());
  e.value.assign(value.data(), value.size());
  return Status::OK();
}

Status CompactionStream::FlushColumn() {
  if (column_size_ == 0) return Status::OK();
  std::vector<bool>& keep = keep_;
  keep.assign(column_size_, false);
  std::vector<size_t>& puts = puts_;  // kept puts, newest first
  puts.clear();
  SequenceNumber column_delete_seq = 0;
  bool have_last_ts = false;
  uint64_t last_ts = 0;
  const FamilyInfo* family = schema_ != nullptr ? schema_->FamilyById(column_family_) : nullptr;
  const bool hides_by_timestamp = family != nullptr && family->column_markers_hide_by_timestamp;
  for (size_t i = 0; i < column_size_; i++) {
    const Slice key(column_[i].key);
    const CellType type = CellKeyType(key);
    const uint64_t ts = CellKeyTimestamp(key);
    const SequenceNumber seq = CellKeySequence(key);
    if (type == CellType::kDeleteColumn && hides_by_timestamp) {
      // It hides everything after it in the column, whenever written, so
      // all of that goes. A row marker hides less (only what came before
      // it), so only the bottom lets this marker go.
      keep[i] = !RowAtBottom();
      break;
    }
    if (type == CellType::kDeleteColumn) {
      // A newer column marker seen before it (at a timestamp as high or
      // higher) hides everything this one does: it goes too.
      keep[i] = !HiddenByRow(ts, seq) && seq > column_delete_seq && !RowAtBottom();
      column_delete_seq = std::max(column_delete_seq, seq);
      continue;
    }
    if (have_last_ts && ts == last_ts) continue;  // a newer entry at this timestamp decided
    have_last_ts = true;
    last_ts = ts;
    const bool hidden = seq < column_delete_seq || HiddenByRow(ts, seq);
    if (type == CellType::kDeleteCell) {
      keep[i] = !hidden && !RowAtBottom();
      continue;
    }
    if (!hidden) {
      keep[i] = true;
      puts.push_back(i);
    }
  }

  std::vector<std::string> new_values;
  std::vector<CompactionFilter::Decision> decisions;
  if (filter_ != nullptr && !puts.empty()) {
    ParsedCellKey parsed;
    if (!ParseCellKey(column_[puts[0]].key, &parsed)) {
      return Status::Corruption("compaction input holds a malformed cell key");
    }
    const FamilyInfo* family = schema_->FamilyById(parsed.family);
    std::vector<CompactionFilter::Version> versions;
    for (size_t i : puts) {
      versions.push_back({CellKeyTimestamp(column_[i].key), column_[i].value});
    }
    decisions.assign(puts.size(), CompactionFilter::Decision::kKeep);
    new_values.assign(puts.size(), std::string());
    filter_->FilterColumn(context_, parsed.row, family ? family->name : std::string_view(),
                          parsed.qualifier, versions, &decisions, &new_values);
    for (size_t j = 0; j < puts.size(); j++) {
      if (decisions[j] == CompactionFilter::Decision::kDrop) keep[puts[j]] = false;
      if (decisions[j] == CompactionFilter::Decision::kRewrite) {
        column_[puts[j]].value = std::move(new_values[j]);
      }
    }
  }
  Status s;
  for (size_t i = 0; i < column_size_ && s.ok(); i++) {
    if (keep[i]) {
      std::string& key = column_[i].key;
      if (bottommost_) {
        // Only puts are left, one per (column, timestamp), and every entry
        // of the column above this output is newer: the sequence orders
        // nothing any more, and 0 costs the least to store.
        EncodeBigEndian64(key.data() + key.size() - 8,
                          ~static_cast<uint64_t>(CellKeyType(Slice(key))));
      }
      s = emit_(key, column_[i].value);
    } else {
      dropped_++;
    }
  }
  column_size_ = 0;
  return s;
}

Status CompactionStream::Finish() { return FlushColumn(); }

}  // namespace strata::engine
