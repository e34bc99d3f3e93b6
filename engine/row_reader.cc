#include "engine/row_reader.h"

#include <algorithm>

#include "common/coding.h"

namespace strata::engine {

bool ResolvedFilter::MayWantFamily(uint16_t family) const {
  if (WantsFamily(family)) return true;
  auto it = columns.lower_bound({family, std::string()});
  return it != columns.end() && it->first == family;
}

Status CollectRow(InternalIterator* it, const Slice& row, SequenceNumber snapshot,
                  const ResolvedFilter& filter, std::vector<VisibleCell>* out) {
  std::string prefix;
  AppendRowPrefix(&prefix, row);
  it->Seek(prefix);
  return CollectRowFromHere(it, prefix, snapshot, filter, out);
}

Status CollectRowFromHere(InternalIterator* it, const Slice& prefix, SequenceNumber snapshot,
                          const ResolvedFilter& filter, std::vector<VisibleCell>* out) {
  struct RowMarker {
    uint64_t timestamp;
    SequenceNumber sequence;
  };
  std::vector<RowMarker> row_markers;

  std::string column;  // (row, family, qualifier) bytes of the current column
  uint16_t family = 0;
  std::string qualifier;
  bool wanted = false;
  SequenceNumber column_delete_seq = 0;  // newest DeleteColumn seen in this column
  bool have_last_ts = false;
  uint64_t last_ts = 0;
  uint32_t versions = 0;

  for (; it->Valid(); it->Next()) {
    const Slice key = it->key();
    if (!key.starts_with(prefix)) break;
    if (key.size() < prefix.size() + 2 + 2 + 16) {
      return Status::Corruption("malformed cell key " + HexBytes(key));
    }
    const SequenceNumber seq = CellKeySequence(key);
    if (seq > snapshot) continue;
    const CellType type = CellKeyType(key);
    const uint64_t ts = CellKeyTimestamp(key);
    const uint16_t fam = DecodeBigEndian16(key.data() + prefix.size());
    if (fam == kRowMarkerFamily) {
      if (type == CellType::kDeleteRow) row_markers.push_back({ts, seq});
      continue;
    }
    const Slice col = CellKeyColumn(key);
    if (col != Slice(column)) {
      column.assign(col.data(), col.size());
      family = fam;
      Slice q(col.data() + prefix.size() + 2, col.size() - prefix.size() - 2);
      if (!GetMemcomparable(&q, &qualifier) || !q.empty()) {
        return Status::Corruption("malformed qualifier in cell key " + HexBytes(key));
      }
      wanted = filter.WantsColumn(family, qualifier);
      column_delete_seq = 0;
      have_last_ts = false;
      versions = 0;
    }
    if (!wanted) continue;
    if (type == CellType::kDeleteColumn) {
      column_delete_seq = std::max(column_delete_seq, seq);
      continue;
    }
    if (have_last_ts && ts == last_ts) continue;  // a newer entry at this timestamp decided
    have_last_ts = true;
    last_ts = ts;
    if (type != CellType::kPut) continue;  // kDeleteCell hides this version
    if (seq < column_delete_seq) continue;
    bool hidden = false;
    for (const auto& m : row_markers) {
      if (m.timestamp >= ts && m.sequence > seq) {
        hidden = true;
        break;
      }
    }
    if (hidden) continue;
    if (ts < filter.min_timestamp || ts > filter.max_timestamp) continue;
    if (versions >= filter.max_versions) continue;
    versions++;
    const Slice v = it->value();
    out->push_back(VisibleCell{family, qualifier, ts, v.ToString()});
  }
  return it->status();
}

}  // namespace strata::engine
