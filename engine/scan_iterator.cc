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
                           std::vector<GroupInput> inputs, std::string start_prefix,
                           std::string end_prefix, ResolvedFilter filter, SequenceNumber snapshot,
                           std::shared_ptr<sstable::CacheFillBudget> fill_budget)
    : engine_(std::move(engine)),
      table_(std::move(table)),
      schema_(std::move(schema)),
      inputs_(std::move(inputs)),
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
  for (auto& in : inputs_) {
    if (target.empty()) {
      in.it->SeekToFirst();
    } else {
      in.it->Seek(target);
    }
    if (!NotePosition(&in)) return;
  }
  Advance();
}

bool ScanIterator::NotePosition(GroupInput* in) {
  in->prefix_size = 0;
  if (!in->it->Valid()) {
    if (!in->it->status().ok()) {
      status_ = in->it->status();
      return false;
    }
    return true;
  }
  const Slice key = in->it->key();
  // Most rows hold no 0x00 byte: their first 0x00 starts the terminator.
  const char* zero = static_cast<const char*>(std::memchr(key.data(), 0, key.size()));
  if (zero != nullptr && zero + 1 < key.data() + key.size() && zero[1] == '\x01') {
    in->prefix_size = static_cast<size_t>(zero + 2 - key.data());
    in->plain_row = true;
    return true;
  }
  Slice rest = key;
  if (!SkipMemcomparable(&rest)) {
    status_ = Status::Corruption("scan met a malformed cell key " + HexBytes(key));
    return false;
  }
  in->prefix_size = key.size() - rest.size();
  in->plain_row = false;
  return true;
}

void ScanIterator::Advance() {
  valid_ = false;
  while (status_.ok()) {
    Slice smallest_prefix;
    const GroupInput* smallest = SmallestRow(&smallest_prefix);
    if (smallest == nullptr) return;
    if (!end_prefix_.empty() && smallest_prefix.compare(end_prefix_) >= 0) return;
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
  for (auto& in : inputs_) {
    // One input stands on the smallest row when it is the only one.
    if (inputs_.size() > 1 &&
        (in.prefix_size != prefix.size() ||
         std::memcmp(in.it->key().data(), prefix.data(), prefix.size()) != 0)) {
      continue;
    }
    Status s = CollectRowFromHere(in.it.get(), prefix, &at, filter_, *schema_, &collected_);
    if (!s.ok()) {
      status_ = s;
      return false;
    }
    if (!NotePosition(&in)) return false;
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
  for (;;) {
    // The largest row below the target that any input holds.
    bool found = false;
    for (auto& in : inputs_) {
      in.it->SeekBefore(prev_target_);
      if (!NotePosition(&in)) return;
      if (in.prefix_size == 0) continue;
      const Slice p(in.it->key().data(), in.prefix_size);
      if (!found || p.compare(row_prefix_) > 0) {
        row_prefix_.assign(p.data(), p.size());
        found = true;
      }
    }
    if (!found || Slice(row_prefix_).compare(start_prefix_) < 0) {
      // Before the range: the inputs stand nowhere a Next could use.
      for (auto& in : inputs_) in.prefix_size = 0;
      return;
    }
    // Every input to that row, which is then the smallest any stands on.
    prev_target_ = row_prefix_;
    for (auto& in : inputs_) {
      in.it->Seek(prev_target_);
      if (!NotePosition(&in)) return;
    }
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
