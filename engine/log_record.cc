// Encoding: engine/LOG_RECORD.md.
#include "engine/log_record.h"

#include <algorithm>

#include "common/coding.h"

namespace strata::engine {
namespace {
// DO NOT CHANGE: stored in the log.
constexpr char kRowsKind = static_cast<char>(LogRecordKind::kRows);
constexpr char kSkipKind = static_cast<char>(LogRecordKind::kSequenceSkip);
}  // namespace

Slice SequenceSkipPayload() {
  static constexpr char kPayload[] = {kSkipKind};
  return Slice(kPayload, sizeof(kPayload));
}

LogRecordBuilder::LogRecordBuilder() = default;

void LogRecordBuilder::AddRow(uint64_t tablet_id, const Slice& row,
                              const std::vector<CellEntry>& entries) {
  PutVarint64(&rows_, tablet_id);
  PutLengthPrefixedSlice(&rows_, row);
  PutVarint32(&rows_, static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) {
    rows_.push_back(static_cast<char>(e.type));
    PutVarint32(&rows_, e.family);
    PutLengthPrefixedSlice(&rows_, e.qualifier);
    PutFixed64(&rows_, e.timestamp);
    if (e.type == CellType::kPut) PutLengthPrefixedSlice(&rows_, e.value);
  }
  row_count_++;
  entries_ += entries.size();
}

Slice LogRecordBuilder::Finish() {
  out_.clear();
  out_.push_back(kRowsKind);
  PutVarint32(&out_, row_count_);
  out_ += rows_;
  return out_;
}

Status DecodeLogRecord(const Slice& payload, std::vector<LoggedRow>* rows, LogRecordKind* kind) {
  rows->clear();
  auto bad = [](const std::string& what) { return Status::Corruption("log record: " + what); };
  Slice in = payload;
  if (in.empty()) return bad("empty payload");
  if (in[0] == kSkipKind) {
    if (in.size() != 1) {
      return bad("sequence skip with " + std::to_string(in.size() - 1) + " trailing bytes");
    }
    *kind = LogRecordKind::kSequenceSkip;
    return Status::OK();
  }
  if (in[0] != kRowsKind) {
    return bad("unknown payload kind " + std::to_string(static_cast<uint8_t>(in[0])));
  }
  *kind = LogRecordKind::kRows;
  in.remove_prefix(1);
  uint32_t nrows;
  if (!GetVarint32(&in, &nrows)) return bad("truncated row count");
  for (uint32_t r = 0; r < nrows; r++) {
    LoggedRow row;
    uint32_t nentries;
    if (!GetVarint64(&in, &row.tablet_id) || !GetLengthPrefixedSlice(&in, &row.row) ||
        !GetVarint32(&in, &nentries)) {
      return bad("truncated row header");
    }
    // Each entry takes at least 11 bytes; a count the payload cannot hold is
    // caught below, without reserving memory for it first.
    row.entries.reserve(std::min<size_t>(nentries, in.size() / 11));
    for (uint32_t i = 0; i < nentries; i++) {
      CellEntry e;
      if (in.empty()) return bad("truncated entry");
      uint8_t type = static_cast<uint8_t>(in[0]);
      in.remove_prefix(1);
      if (type == 0 || type > kMaxCellType) return bad("bad entry type " + std::to_string(type));
      e.type = static_cast<CellType>(type);
      uint32_t family;
      if (!GetVarint32(&in, &family) || family > UINT16_MAX ||
          !GetLengthPrefixedSlice(&in, &e.qualifier) || !GetFixed64(&in, &e.timestamp)) {
        return bad("truncated entry");
      }
      e.family = static_cast<uint16_t>(family);
      if (e.type == CellType::kPut && !GetLengthPrefixedSlice(&in, &e.value)) {
        return bad("truncated value");
      }
      row.entries.push_back(e);
    }
    rows->push_back(std::move(row));
  }
  if (!in.empty()) return bad(std::to_string(in.size()) + " trailing bytes");
  return Status::OK();
}

}  // namespace strata::engine
