#include "engine/scan_iterator.h"

#include "common/coding.h"

namespace strata::engine {

ScanIterator::ScanIterator(std::shared_ptr<const DurableReads> engine,
                           std::shared_ptr<TableState> table, std::shared_ptr<const Schema> schema,
                           std::vector<GroupInput> inputs, std::string start_prefix,
                           std::string end_prefix, ResolvedFilter filter, SequenceNumber snapshot)
    : engine_(std::move(engine)),
      table_(std::move(table)),
      schema_(std::move(schema)),
      inputs_(std::move(inputs)),
      end_prefix_(std::move(end_prefix)),
      filter_(std::move(filter)),
      snapshot_(snapshot) {
  for (auto& in : inputs_) {
    if (start_prefix.empty()) {
      in.it->SeekToFirst();
    } else {
      in.it->Seek(start_prefix);
    }
  }
  Advance();
}

Slice ScanIterator::PrefixOf(InternalIterator* it) {
  if (!it->Valid()) return Slice();
  Slice key = it->key();
  Slice rest = key;
  if (!SkipMemcomparable(&rest)) {
    status_ = Status::Corruption("scan met a malformed cell key " + HexBytes(key));
    return Slice();
  }
  return Slice(key.data(), key.size() - rest.size());
}

void ScanIterator::Advance() {
  valid_ = false;
  while (status_.ok()) {
    std::string smallest;
    bool any = false;
    for (auto& in : inputs_) {
      if (!in.it->status().ok()) {
        status_ = in.it->status();
        return;
      }
      Slice p = PrefixOf(in.it.get());
      if (!status_.ok()) return;
      if (p.empty()) continue;
      if (!any || p.compare(smallest) < 0) smallest.assign(p.data(), p.size());
      any = true;
    }
    if (!any) return;
    if (!end_prefix_.empty() && Slice(smallest).compare(end_prefix_) >= 0) return;
    RowCells cells;
    // Inputs interleave families: cells from several are ordered by family id.
    cells.track_families = inputs_.size() > 1;
    ReadPoint at = engine_->ReadPointAt(snapshot_);
    for (auto& in : inputs_) {
      if (PrefixOf(in.it.get()) != Slice(smallest)) continue;
      Status s = CollectRowFromHere(in.it.get(), smallest, &at, filter_, *schema_, &cells);
      if (!s.ok()) {
        status_ = s;
        return;
      }
    }
    // A row with records a crash may still lose is handed out once they
    // are durable.
    if (Status s = engine_->AwaitDurableReads(at); !s.ok()) {
      status_ = s;
      return;
    }
    if (cells.cells.empty()) continue;  // deleted or filtered out
    Slice enc(smallest);
    if (!GetMemcomparable(&enc, &row_)) {
      status_ = Status::Corruption("scan met a malformed row key");
      return;
    }
    if (cells.track_families) cells.SortByFamily();
    cells_ = std::move(cells.cells);
    valid_ = true;
    return;
  }
}

}  // namespace strata::engine
