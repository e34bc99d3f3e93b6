#include "engine/row_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/coding.h"

namespace strata::engine {

namespace {

// The (family, qualifier) bytes of the column being read, after the row's
// prefix. Keys move on under the iterator, so they are copied; short ones
// stay inline.
class ColumnBytes {
 public:
  Slice get() const { return Slice(data_, size_); }
  // Whether `col`, whose ColumnHead is `head`, is this column.
  bool Equals(const Slice& col, uint64_t head) const {
    return head == head_ && col.size() == size_ && std::memcmp(col.data(), data_, size_) == 0;
  }
  void Assign(const Slice& col, uint64_t head) {
    head_ = head;
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
  char inline_[64];
  std::string heap_;
  const char* data_ = inline_;
  size_t size_ = 0;
  uint64_t head_ = 0;
};

// key.starts_with(prefix), comparing 8 bytes at a time: a row's prefix is
// short, and is compared once per entry of the walk.
inline bool StartsWith(const Slice& key, const Slice& prefix) {
  const size_t n = prefix.size();
  if (key.size() < n) return false;
  const char* a = key.data();
  const char* b = prefix.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    uint64_t y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  for (; i < n; i++) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

void ResolvedFilter::ReserveColumns(size_t columns, size_t qualifier_bytes) {
  columns_.reserve(columns_.size() + columns);
  // Each column: family, qualifier encoded (+2, more with 0x00 bytes) and as given.
  column_bytes_.reserve(column_bytes_.size() + columns * 4 + qualifier_bytes * 2);
}

void ResolvedFilter::AddColumn(uint16_t family, const Slice& qualifier, const VersionRange& range) {
  all_families = false;
  const size_t n = qualifier.size();
  // Without a 0x00 to escape, the encoding is the qualifier and the terminator.
  const bool plain = n == 0 || std::memchr(qualifier.data(), 0, n) == nullptr;
  const size_t size = 2 + (plain ? n + 2 : MemcomparableLength(qualifier));
  const size_t offset = column_bytes_.size();
  column_bytes_.resize(offset + size + n);
  char* p = column_bytes_.data() + offset;
  EncodeBigEndian16(p, family);
  if (plain) {
    if (n > 0) std::memcpy(p + 2, qualifier.data(), n);
    p[2 + n] = 0;
    p[3 + n] = 1;
  } else {
    EncodeMemcomparable(p + 2, qualifier);
  }
  if (n > 0) std::memcpy(p + size, qualifier.data(), n);
  char head[8] = {};
  std::memcpy(head, p, std::min<size_t>(size, 8));
  columns_.push_back(Span{DecodeBigEndian64(head), offset, size, n, columns_.size(), range});
}

void ResolvedFilter::SortColumns() {
  auto bytes = [this](const Span& s) { return Slice(column_bytes_.data() + s.offset, s.size); };
  // Callers often add columns in order already.
  const bool ascending =
      std::adjacent_find(columns_.begin(), columns_.end(), [&](const Span& a, const Span& b) {
        return bytes(a).compare(bytes(b)) >= 0;
      }) == columns_.end();
  if (ascending) return;
  // Ties by source, so of repeats the first added stays.
  std::sort(columns_.begin(), columns_.end(), [&](const Span& a, const Span& b) {
    const int c = bytes(a).compare(bytes(b));
    return c != 0 ? c < 0 : a.source < b.source;
  });
  // Repeats are adjacent, the first added first: it absorbs the others' ranges.
  size_t kept = 0;
  for (size_t i = 0; i < columns_.size(); i++) {
    if (kept > 0 && bytes(columns_[kept - 1]) == bytes(columns_[i])) {
      VersionRange& r = columns_[kept - 1].range;
      const VersionRange& o = columns_[i].range;
      r.min_timestamp = std::min(r.min_timestamp, o.min_timestamp);
      r.max_timestamp = std::max(r.max_timestamp, o.max_timestamp);
      r.max_versions = std::max(r.max_versions, o.max_versions);
      continue;
    }
    columns_[kept++] = columns_[i];
  }
  columns_.resize(kept);
}

uint64_t ResolvedFilter::MinWantedTimestamp(const Schema& schema, uint32_t group) const {
  auto in_group = [&](uint16_t family) {
    const FamilyInfo* f = schema.FamilyById(family);
    return f != nullptr && f->locality_group == group;
  };
  bool whole = all_families;
  for (size_t id = 0; id < families.size() && !whole; id++) {
    whole = families[id] && in_group(static_cast<uint16_t>(id));
  }
  uint64_t lowest = whole ? min_timestamp : kMaxTimestamp;
  for (const Span& c : columns_) {
    // A column's bytes start with its family id.
    if (in_group(DecodeBigEndian16(column_bytes_.data() + c.offset))) {
      lowest = std::min(lowest, c.range.min_timestamp);
    }
  }
  return lowest;
}

bool ResolvedFilter::MayWantFamily(uint16_t family) const {
  if (WantsFamily(family)) return true;
  char id[2];
  EncodeBigEndian16(id, family);
  const Slice target(id, 2);
  auto it = std::lower_bound(columns_.begin(), columns_.end(), target,
                             [this](const Span& s, const Slice& t) {
                               return Slice(column_bytes_.data() + s.offset, s.size).compare(t) < 0;
                             });
  return it != columns_.end() && std::memcmp(column_bytes_.data() + it->offset, id, 2) == 0;
}

void RowCells::Add(const FoundColumn& column, uint64_t timestamp, Slice value) {
  Cell& cell = cells.emplace_back();
  cell.family = column.family->name;
  cell.qualifier.assign(column.qualifier.data(), column.qualifier.size());
  cell.timestamp = timestamp;
  cell.value.assign(value.data(), value.size());
  if (track_families) families.push_back(column.family_id);
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

Status CollectRowFromHere(InternalIterator* it, const Slice& prefix, ReadPoint* at,
                          const ResolvedFilter& filter, const Schema& schema, RowSink* out) {
  // A column that is done, or not wanted, is walked on for this many more
  // entries before a Seek skips the rest: a Seek costs a search in every
  // source, and a column may hold any number of versions.
  constexpr int kNextsBeforeSeek = 8;
  struct RowMarker {
    uint64_t timestamp;
    SequenceNumber sequence;
  };
  std::vector<RowMarker> row_markers;

  ColumnBytes column;  // (family, qualifier) bytes of the current column
  bool have_column = false;
  FoundColumn found;  // the current column
  std::string qualifier;
  bool wanted = false;
  // The current column's range; `done` once no further entry of it can be
  // handed out, after which `skipped` counts the entries walked past.
  const VersionRange whole_range{filter.min_timestamp, filter.max_timestamp, filter.max_versions};
  const VersionRange* range = &whole_range;
  bool done = false;
  int skipped = 0;
  std::string seek_target;               // non-empty: the next step is a Seek to it
  SequenceNumber column_delete_seq = 0;  // newest DeleteColumn seen in this column
  bool have_last_ts = false;
  uint64_t last_ts = 0;
  uint32_t versions = 0;
  // The row's columns come in ascending order, as do the filter's single
  // columns: filter.column(i) for i < next_single sort below the current
  // column, so each column costs one comparison with the next single one.
  const size_t num_singles = filter.num_columns();
  size_t next_single = 0;

  auto advance = [&] {
    if (seek_target.empty()) {
      it->Next();
    } else {
      it->Seek(seek_target);
      seek_target.clear();
    }
  };
  for (; it->Valid(); advance()) {
    const Slice key = it->key();
    if (!StartsWith(key, prefix)) break;
    if (key.size() < prefix.size() + 2 + 2 + 16) {
      return Status::Corruption("malformed cell key " + HexBytes(key));
    }
    const SequenceNumber seq = CellKeySequence(key);
    if (seq > at->snapshot) continue;
    const bool undurable = seq >= at->undurable_first && seq <= at->undurable_last;
    const CellType type = CellKeyType(key);
    const uint64_t ts = CellKeyTimestamp(key);
    const uint16_t fam = DecodeBigEndian16(key.data() + prefix.size());
    if (fam == kRowMarkerFamily) {
      if (type == CellType::kDeleteRow) {
        row_markers.push_back({ts, seq});
        at->saw_undurable |= undurable;
      }
      continue;
    }
    // (family, qualifier): the key after the row, without timestamp and tag.
    const Slice col(key.data() + prefix.size(), key.size() - prefix.size() - 16);
    const uint64_t head = ColumnHead(col.data(), col.size());
    if (!have_column || !column.Equals(col, head)) {
      column.Assign(col, head);
      have_column = true;
      wanted = filter.WantsFamily(fam);
      if (!wanted) {
        int c = 1;
        while (next_single < num_singles &&
               (c = filter.CompareColumn(next_single, col, head)) < 0) {
          next_single++;
        }
        wanted = next_single < num_singles && c == 0;
        found.index = next_single;
      } else {
        found.index = FoundColumn::kWholeFamily;
      }
      if (wanted && found.index != FoundColumn::kWholeFamily) {
        // The column equals the filter's encoding of it, so it is well formed.
        found.qualifier = filter.qualifier(found.index);
        range = &filter.column_range(found.index);
      } else {
        // Only a wanted column's qualifier is decoded; every one is checked.
        // One without a 0x00 byte is its encoding less the terminator, read
        // in place from the column's copy.
        Slice q(col.data() + 2, col.size() - 2);
        const char* zero = static_cast<const char*>(std::memchr(q.data(), 0, q.size()));
        if (zero != nullptr && zero + 2 == q.data() + q.size() && zero[1] == '\x01') {
          found.qualifier = Slice(column.get().data() + 2, q.size() - 2);
        } else {
          const bool well_formed =
              wanted ? GetMemcomparable(&q, &qualifier) : SkipMemcomparable(&q);
          if (!well_formed || !q.empty()) {
            return Status::Corruption("malformed qualifier in cell key " + HexBytes(key));
          }
          found.qualifier = Slice(qualifier);
        }
        range = &whole_range;
      }
      found.family = nullptr;
      column_delete_seq = 0;
      have_last_ts = false;
      versions = 0;
      done = false;
      skipped = 0;
    }
    if (!wanted || done) {
      if (++skipped > kNextsBeforeSeek) {
        // Past every key of the column: the lowest timestamp and tag.
        seek_target.assign(key.data(), key.size() - 16);
        seek_target.append(16, '\xff');
        skipped = 0;
      }
      continue;
    }
    // Versions come newest first: below the range, nothing more of the
    // column is handed out (a delete marker there hides only lower ones).
    if (ts < range->min_timestamp) {
      done = true;  // this entry is the first one walked past
      skipped = 1;
      continue;
    }
    // An undurable entry that may decide what is handed out: a column
    // delete (it hides versions below it), or a version or cell delete in
    // the range. One above the range changes nothing.
    if (type == CellType::kDeleteColumn) {
      at->saw_undurable |= undurable;
      column_delete_seq = std::max(column_delete_seq, seq);
      // Where column markers hide by timestamp, what follows this one (below
      // its timestamp, or at it and older) is hidden, whenever written. An
      // unknown family is Corruption only once a version of it is found.
      if (found.family == nullptr) {
        found.family = schema.FamilyById(fam);
        found.family_id = fam;
      }
      if (found.family != nullptr && found.family->column_markers_hide_by_timestamp) done = true;
      continue;
    }
    if (ts <= range->max_timestamp) at->saw_undurable |= undurable;
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
    if (ts > range->max_timestamp) continue;
    versions++;
    if (versions >= range->max_versions) done = true;
    if (found.family == nullptr) {
      found.family = schema.FamilyById(fam);
      if (found.family == nullptr) {
        return Status::Corruption("cell key " + HexBytes(key) + " names family id " +
                                  std::to_string(fam) + ", which the table does not have");
      }
      found.family_id = fam;
    }
    out->Add(found, ts, it->value());
  }
  // A valid iterator has no error (common/iterator.h).
  return it->Valid() ? Status::OK() : it->status();
}

}  // namespace strata::engine
