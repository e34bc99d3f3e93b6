#include "engine/row_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/coding.h"

namespace strata::engine {

namespace {

// The (row, family, qualifier) bytes of the column being read. Keys move
// on under the iterator, so the column is copied; short ones stay inline.
class ColumnBytes {
 public:
  Slice get() const { return Slice(data_, size_); }
  void Assign(const Slice& col) {
    if (col.size() <= sizeof(inline_)) {
      std::memcpy(inline_, col.data(), col.size());
      data_ = inline_;
    } else {
      heap_.assign(col.data(), col.size());
      data_ = heap_.data();
    }
    size_ = col.size();
  }

 private:
  char inline_[96];
  std::string heap_;
  const char* data_ = inline_;
  size_t size_ = 0;
};

}  // namespace

bool ResolvedFilter::MayWantFamily(uint16_t family) const {
  if (WantsFamily(family)) return true;
  auto it = columns.lower_bound({family, std::string()});
  return it != columns.end() && it->first == family;
}

void RowCells::SortByFamily() {
  std::vector<size_t> order(cells.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return families[a] < families[b]; });
  std::vector<Cell> sorted;
  std::vector<uint16_t> sorted_families;
  sorted.reserve(cells.size());
  sorted_families.reserve(cells.size());
  for (size_t i : order) {
    sorted.push_back(std::move(cells[i]));
    sorted_families.push_back(families[i]);
  }
  cells.swap(sorted);
  families.swap(sorted_families);
}

Status CollectRowFromHere(InternalIterator* it, const Slice& prefix, SequenceNumber snapshot,
                          const ResolvedFilter& filter, const Schema& schema, RowCells* out) {
  struct RowMarker {
    uint64_t timestamp;
    SequenceNumber sequence;
  };
  std::vector<RowMarker> row_markers;

  ColumnBytes column;  // (row, family, qualifier) bytes of the current column
  bool have_column = false;
  const FamilyInfo* family = nullptr;
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
    if (!have_column || col != column.get()) {
      column.Assign(col);
      have_column = true;
      Slice q(col.data() + prefix.size() + 2, col.size() - prefix.size() - 2);
      if (!GetMemcomparable(&q, &qualifier) || !q.empty()) {
        return Status::Corruption("malformed qualifier in cell key " + HexBytes(key));
      }
      wanted = filter.WantsColumn(fam, qualifier);
      family = nullptr;
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
    if (family == nullptr) {
      family = schema.FamilyById(fam);
      if (family == nullptr) {
        return Status::Corruption("cell key " + HexBytes(key) + " names family id " +
                                  std::to_string(fam) + ", which the table does not have");
      }
    }
    const Slice v = it->value();
    out->cells.push_back(Cell{family->name, qualifier, ts, v.ToString()});
    if (out->track_families) out->families.push_back(fam);
  }
  return it->status();
}

}  // namespace strata::engine
