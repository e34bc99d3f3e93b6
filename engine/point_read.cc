#include "engine/point_read.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/tablet.h"
#include "engine/merging_iterator.h"

namespace strata::engine {

namespace {

// One memtable or file positioned on the row.
struct Source {
  std::shared_ptr<sstable::TableReader> reader;  // for files: outlives `it`
  std::unique_ptr<InternalIterator> it;
};

// The sources found so far; the first few need no allocation.
class Sources {
 public:
  size_t size() const { return n_; }
  Source& operator[](size_t i) { return i < few_.size() ? few_[i] : more_[i - few_.size()]; }
  void Add(Source s) {
    if (n_ < few_.size()) {
      few_[n_] = std::move(s);
    } else {
      more_.push_back(std::move(s));
    }
    n_++;
  }

 private:
  std::array<Source, 4> few_;
  std::vector<Source> more_;
  size_t n_ = 0;
};

// True if a file whose smallest key is `smallest` may hold keys below the
// end of the row, i.e. smallest < prefix with its last byte (0x01) raised
// to 0x02: its first min(len) bytes are at most the prefix's.
bool StartsAtOrBeforeRow(const std::string& smallest, const Slice& prefix) {
  const size_t n = std::min(smallest.size(), prefix.size());
  return std::memcmp(smallest.data(), prefix.data(), n) <= 0;
}

// Seeks `it` to the row; keeps it when it lands on one of the row's entries.
Status Probe(std::unique_ptr<InternalIterator> it, std::shared_ptr<sstable::TableReader> reader,
             const Slice& prefix, Sources* sources) {
  it->Seek(prefix);
  if (it->Valid() && it->key().starts_with(prefix)) {
    sources->Add(Source{std::move(reader), std::move(it)});
    return Status::OK();
  }
  return it->status();
}

// `min_wanted`: ResolvedFilter::MinWantedTimestamp of the read.
Status ProbeFile(const TableFile& file, sstable::TableCache* tables,
                 sstable::BlockCache::OwnerId tenant, const Slice& prefix, uint64_t min_wanted,
                 Sources* sources) {
  Result<std::shared_ptr<sstable::TableReader>> reader = tables->Get(file.meta.number, tenant);
  if (!reader.ok()) return reader.status();
  // Every cell older than the read wants, markers too: nothing for it.
  if ((*reader)->properties().max_timestamp < min_wanted) return Status::OK();
  if (!(*reader)->RowPrefixMayMatch(prefix)) return Status::OK();
  std::unique_ptr<InternalIterator> it = (*reader)->NewIterator();
  return Probe(std::move(it), std::move(reader.value()), prefix, sources);
}

// Calls visit(level, index) for each file of `levels` (a view's) at levels
// >= first_level whose key range may hold the row `prefix`, until it returns
// true; returns whether one did.
template <typename Visit>
bool AnyFileOfRow(const std::vector<std::vector<std::shared_ptr<TableFile>>>& levels,
                  size_t first_level, const Slice& prefix, Visit visit) {
  for (size_t level = first_level; level < levels.size(); level++) {
    const auto& files = levels[level];
    if (level == 0) {
      // Overlapping ranges: every file may hold the row.
      for (size_t i = 0; i < files.size(); i++) {
        if (Slice(files[i]->meta.largest).compare(prefix) < 0) continue;
        if (!StartsAtOrBeforeRow(files[i]->meta.smallest, prefix)) continue;
        if (visit(level, i)) return true;
      }
      continue;
    }
    // Disjoint ranges sorted by key: the files that may hold the row are the
    // run starting at the first one that ends at or after the row's start
    // (a row may be cut between adjacent files).
    auto it = std::partition_point(files.begin(), files.end(), [&](const auto& f) {
      return Slice(f->meta.largest).compare(prefix) < 0;
    });
    for (; it != files.end() && StartsAtOrBeforeRow((*it)->meta.smallest, prefix); ++it) {
      if (visit(level, static_cast<size_t>(it - files.begin()))) return true;
    }
  }
  return false;
}

}  // namespace

Status ReadRowFromGroup(const GroupView& view, uint32_t group, sstable::TableCache* tables,
                        sstable::BlockCache::OwnerId tenant, const Slice& prefix, ReadPoint* at,
                        const ResolvedFilter& filter, const Schema& schema, RowSink* out) {
  Sources sources;
  const uint64_t min_wanted = filter.MinWantedTimestamp(schema, group);
  // Memtables: the view keeps them alive for the call. The caller read the
  // snapshot after the Adds of every entry it may see, so their rows are in
  // the row filters.
  if (view.mem->num_entries() > 0 && view.mem->MayContainRow(prefix)) {
    STRATA_RETURN_IF_ERROR(Probe(view.mem->NewIterator(), nullptr, prefix, &sources));
  }
  for (const auto& imm : view.imms) {
    if (imm.mem->num_entries() == 0 || !imm.mem->MayContainRow(prefix)) continue;
    STRATA_RETURN_IF_ERROR(Probe(imm.mem->NewIterator(), nullptr, prefix, &sources));
  }
  Status status;
  AnyFileOfRow(view.levels, 0, prefix, [&](size_t level, size_t i) {
    status = ProbeFile(*view.levels[level][i], tables, tenant, prefix, min_wanted, &sources);
    return !status.ok();  // stop at an error
  });
  STRATA_RETURN_IF_ERROR(status);
  if (sources.size() == 0) return Status::OK();
  if (sources.size() == 1) {
    return CollectRowFromHere(sources[0].it.get(), prefix, at, filter, schema, out);
  }
  // The row is spread over several sources: merge them in key order.
  std::vector<std::unique_ptr<InternalIterator>> children;
  std::vector<std::shared_ptr<const void>> pins;
  children.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); i++) {
    children.push_back(std::move(sources[i].it));
    if (sources[i].reader) pins.push_back(std::move(sources[i].reader));
  }
  // Each source stands on its first entry of the row already.
  std::unique_ptr<InternalIterator> merged =
      NewMergingIteratorAtChildren(std::move(children), std::move(pins));
  return CollectRowFromHere(merged.get(), prefix, at, filter, schema, out);
}

DeeperFiles::DeeperFiles(const GroupView& view, int first_level, sstable::TableCache* tables,
                         sstable::BlockCache::OwnerId tenant)
    : first_level_(first_level), tables_(tables), tenant_(tenant) {
  levels_.resize(view.levels.size());
  for (size_t level = static_cast<size_t>(first_level); level < view.levels.size(); level++) {
    levels_[level] = view.levels[level];
  }
}

bool DeeperFiles::MayHoldRow(const Slice& row_prefix) {
  return AnyFileOfRow(levels_, static_cast<size_t>(first_level_), row_prefix,
                      [&](size_t level, size_t i) { return FileMayHoldRow(level, i, row_prefix); });
}

bool DeeperFiles::FileMayHoldRow(size_t level, size_t index, const Slice& row_prefix) {
  Result<std::shared_ptr<sstable::TableReader>> reader =
      tables_->Get(levels_[level][index]->meta.number, tenant_);
  return !reader.ok() || (*reader)->RowPrefixMayMatch(row_prefix);
}

}  // namespace strata::engine
