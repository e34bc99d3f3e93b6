#include "engine/scan_iterator.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "common/coding.h"

namespace strata::engine {

void ScanIterator::Collector::Add(const FoundColumn& column, uint64_t timestamp, Slice value) {
  const Slice& q = column.qualifier;
  entries.push_back(Entry{column.family_id, &column.family->name, timestamp, bytes.size(),
                          static_cast<uint32_t>(q.size()), static_cast<uint32_t>(value.size())});
  bytes.append(q.data(), q.size());
  bytes.append(value.data(), value.size());
}

ScanIterator::ScanIterator(std::shared_ptr<const DurableReads> engine,
                           std::shared_ptr<TableState> table, std::shared_ptr<const Schema> schema,
                           std::vector<GroupInput> inputs, std::vector<TabletPart> parts,
                           InputOpener open, std::string start_prefix, std::string end_prefix,
                           ResolvedFilter filter, SequenceNumber snapshot,
                           std::shared_ptr<sstable::CacheFillBudget> fill_budget)
    : engine_(std::move(engine)),
      table_(std::move(table)),
      schema_(std::move(schema)),
      inputs_(std::move(inputs)),
      parts_(std::move(parts)),
      open_(std::move(open)),
      start_prefix_(std::move(start_prefix)),
      end_prefix_(std::move(end_prefix)),
      filter_(std::move(filter)),
      // Records at or below the snapshot that are durable now stay so, and
      // those above it are not read: one read point serves every row.
      read_point_(engine_->ReadPointAt(snapshot)),
      fill_budget_(std::move(fill_budget)) {
  run_ends_.reserve(inputs_.size());
  SeekInputs(start_prefix_);
}

void ScanIterator::Seek(std::string_view row) {
  if (!status_.ok()) return;
  seek_target_.clear();
  if (!row.empty()) AppendRowPrefix(&seek_target_, Slice(row.data(), row.size()));
  if (Slice(seek_target_).compare(start_prefix_) < 0) seek_target_ = start_prefix_;
  if (fill_budget_) fill_budget_->Refill();
  SeekInputs(seek_target_);
}

void ScanIterator::SeekInputs(const std::string& target) {
  valid_ = false;
  if (!end_prefix_.empty() && !target.empty() && Slice(target).compare(end_prefix_) >= 0) return;
  // The part holding the target: the first that ends after it.
  size_t p = 0;
  while (p < parts_.size() && !parts_[p].hi.empty() && Slice(target).compare(parts_[p].hi) >= 0) {
    p++;
  }
  if (p == parts_.size()) return;
  part_ = p;
  PositionPart(p, target);
  Advance();
}

void ScanIterator::PositionPart(size_t p, const std::string& target) {
  const TabletPart& part = parts_[p];
  const bool from_lo = target.empty() || Slice(target).compare(part.lo) < 0;
  for (size_t i = part.first_input; i < part.end_input; i++) {
    GroupInput& in = inputs_[i];
    in.prefix_size = 0;
    if (!Open(part, &in)) return;
    if (!from_lo) {
      in.it->Seek(target);
    } else if (part.lo.empty()) {
      in.it->SeekToFirst();
    } else {
      in.it->Seek(part.lo);
    }
    if (!NotePosition(p, &in)) return;
  }
}

bool ScanIterator::Open(const TabletPart& part, GroupInput* in) {
  if (in->it != nullptr) return true;
  status_ = open_(*in, part, &in->it);
  return status_.ok();
}

bool ScanIterator::NotePosition(size_t p, GroupInput* in) {
  in->prefix_size = 0;
  if (!in->it->Valid()) {
    if (!in->it->status().ok()) {
      status_ = in->it->status();
      return false;
    }
    return true;
  }
  const Slice key = in->it->key();
  size_t prefix_size;
  // Most rows hold no 0x00 byte: their first 0x00 starts the terminator.
  const char* zero = static_cast<const char*>(std::memchr(key.data(), 0, key.size()));
  if (zero != nullptr && zero + 1 < key.data() + key.size() && zero[1] == '\x01') {
    prefix_size = static_cast<size_t>(zero + 2 - key.data());
    in->plain_row = true;
  } else {
    Slice rest = key;
    if (!SkipMemcomparable(&rest)) {
      status_ = Status::Corruption("scan met a malformed cell key " + HexBytes(key));
      return false;
    }
    prefix_size = key.size() - rest.size();
    in->plain_row = false;
  }
  // A row past the part's end is a later part's (or past the range).
  const std::string& hi = parts_[p].hi;
  if (!hi.empty() && Slice(key.data(), prefix_size).compare(hi) >= 0) return true;
  in->prefix_size = prefix_size;
  return true;
}

void ScanIterator::Advance() {
  valid_ = false;
  while (status_.ok()) {
    Slice smallest_prefix;
    const GroupInput* smallest = SmallestRow(&smallest_prefix);
    if (smallest == nullptr) {
      // The part is done: on to the next one's first row.
      if (part_ + 1 >= parts_.size()) return;
      part_++;
      PositionPart(part_, std::string());
      continue;
    }
    if (ReadRow(*smallest, smallest_prefix)) return;
  }
}

bool ScanIterator::ReadRow(const GroupInput& smallest, const Slice& smallest_prefix) {
  // The walks move the inputs, so the prefix is copied.
  row_prefix_.assign(smallest_prefix.data(), smallest_prefix.size());
  const bool plain_row = smallest.plain_row;
  const Slice prefix(row_prefix_);
  collected_.Clear();
  run_ends_.clear();
  ReadPoint at = read_point_;
  const TabletPart& part = parts_[part_];
  const bool several = part.end_input - part.first_input > 1;
  for (size_t i = part.first_input; i < part.end_input; i++) {
    GroupInput& in = inputs_[i];
    // One input stands on the smallest row when it is the only one.
    if (several && (in.prefix_size != prefix.size() ||
                    std::memcmp(in.it->key().data(), prefix.data(), prefix.size()) != 0)) {
      continue;
    }
    Status s = CollectRowFromHere(in.it.get(), prefix, &at, filter_, *schema_, &collected_);
    if (!s.ok()) {
      status_ = s;
      return false;
    }
    if (!NotePosition(part_, &in)) return false;
    run_ends_.push_back(collected_.entries.size());
  }
  // A row with records a crash may still lose is handed out once they are
  // durable.
  if (Status s = engine_->AwaitDurableReads(at); !s.ok()) {
    status_ = s;
    return false;
  }
  if (collected_.entries.empty()) return false;  // deleted or filtered out
  // A row without a 0x00 byte is its prefix less the terminator.
  if (plain_row) {
    row_view_ = std::string_view(prefix.data(), prefix.size() - 2);
  } else {
    Slice enc(prefix);
    if (!GetMemcomparable(&enc, &row_)) {
      status_ = Status::Corruption("scan met a malformed row key");
      return false;
    }
    row_view_ = row_;
  }
  PublishRow(run_ends_);
  valid_ = true;
  return true;
}

void ScanIterator::Prev() {
  if (!status_.ok() || !valid_) return;
  valid_ = false;
  prev_target_ = row_prefix_;
  size_t p = part_;
  for (;;) {
    // The largest row of part p below the target that any of its inputs
    // holds.
    const TabletPart& part = parts_[p];
    const Slice before = !part.hi.empty() && Slice(prev_target_).compare(part.hi) > 0
                             ? Slice(part.hi)
                             : Slice(prev_target_);
    bool found = false;
    for (size_t i = part.first_input; i < part.end_input; i++) {
      GroupInput& in = inputs_[i];
      if (!Open(part, &in)) return;
      in.it->SeekBefore(before);
      if (!NotePosition(p, &in)) return;
      if (in.prefix_size == 0) continue;
      const Slice row(in.it->key().data(), in.prefix_size);
      if (row.compare(part.lo) < 0) {  // a split sibling's row, or before the range
        in.prefix_size = 0;
        continue;
      }
      if (!found || row.compare(row_prefix_) > 0) {
        row_prefix_.assign(row.data(), row.size());
        found = true;
      }
    }
    if (!found) {
      if (p == 0) {
        // Before the range: the inputs stand nowhere a Next could use.
        part_ = parts_.size() - 1;
        for (size_t i = parts_[part_].first_input; i < parts_[part_].end_input; i++) {
          inputs_[i].prefix_size = 0;
        }
        return;
      }
      p--;  // every row of the part before is below the target
      continue;
    }
    // Every input of the part to that row, which is then the smallest any
    // stands on.
    part_ = p;
    prev_target_ = row_prefix_;
    PositionPart(p, prev_target_);
    if (!status_.ok()) return;
    Slice smallest_prefix;
    const GroupInput* smallest = SmallestRow(&smallest_prefix);
    if (smallest == nullptr) {
      status_ = Status::Corruption("scan lost row " + HexBytes(prev_target_) + " stepping back");
      return;
    }
    if (ReadRow(*smallest, smallest_prefix)) return;
    if (!status_.ok()) return;
    // A row with no cell for the scan (deleted, newer than the snapshot,
    // filtered out): on back from it.
  }
}

void ScanIterator::PublishRow(const std::vector<size_t>& run_ends) {
  std::vector<Collector::Entry>* entries = &collected_.entries;
  // Runs of several groups interleave families: merge them by family id
  // (schema order). Each run is in cell-key order, so by family already.
  size_t runs = 0;
  size_t begin = 0;
  for (size_t end : run_ends) {
    if (end > begin) runs++;
    begin = end;
  }
  if (runs > 1) {
    auto by_family = [](const Collector::Entry& a, const Collector::Entry& b) {
      return a.family_id < b.family_id;
    };
    merged_.clear();
    size_t run_begin = 0;
    for (size_t end : run_ends) {
      const auto first = entries->begin() + static_cast<ptrdiff_t>(run_begin);
      const auto last = entries->begin() + static_cast<ptrdiff_t>(end);
      run_begin = end;
      if (first == last) continue;
      merge_scratch_.clear();
      std::merge(merged_.begin(), merged_.end(), first, last, std::back_inserter(merge_scratch_),
                 by_family);
      merged_.swap(merge_scratch_);
    }
    entries = &merged_;
  }
  views_.resize(entries->size());
  const char* bytes = collected_.bytes.data();
  for (size_t i = 0; i < entries->size(); i++) {
    const Collector::Entry& e = (*entries)[i];
    CellView& v = views_[i];
    v.family = *e.family;
    v.qualifier = std::string_view(bytes + e.offset, e.qualifier_size);
    v.timestamp = e.timestamp;
    v.value = std::string_view(bytes + e.offset + e.qualifier_size, e.value_size);
  }
  cells_built_ = false;
}

const std::vector<Cell>& ScanIterator::cells() const {
  if (!cells_built_) {
    // Reuses the strings of earlier rows.
    cells_.resize(views_.size());
    for (size_t i = 0; i < views_.size(); i++) {
      const CellView& v = views_[i];
      Cell& c = cells_[i];
      c.family.assign(v.family);
      c.qualifier.assign(v.qualifier);
      c.timestamp = v.timestamp;
      c.value.assign(v.value);
    }
    cells_built_ = true;
  }
  return cells_;
}

}  // namespace strata::engine
