#include "engine/split.h"

#include <algorithm>
#include <memory>

#include "common/cell_key.h"
#include "common/coding.h"

namespace strata::engine {

namespace {

bool InsideTablet(const std::string& row, const TabletState& t) {
  return row > t.start_row && (t.end_row.empty() || row < t.end_row);
}

}  // namespace

uint64_t TabletBytes(const TabletState& tablet) {
  // Files still shared with a split sibling do not count: their size says
  // nothing about this tablet's half, and counting them whole would split
  // the new tablets again at once. Compactions soon rewrite them into files
  // of the tablet's own.
  uint64_t bytes = 0;
  for (const auto& g : tablet.groups) {
    std::shared_ptr<const GroupView> v = g->current();
    for (const auto& level : v->levels) {
      for (const auto& f : level) {
        if (FileWithinRows(f->meta, tablet.start_row, tablet.end_row)) bytes += f->meta.size;
      }
    }
  }
  return bytes;
}

TabletState* PickSplitCandidate(const VersionSet& versions, uint64_t split_size,
                                const std::unordered_map<const TabletState*, uint64_t>& stuck,
                                uint64_t* bytes) {
  TabletState* candidate = nullptr;
  *bytes = 0;
  versions.ForEachTablet([&](TabletState* tablet) {
    const uint64_t size = TabletBytes(*tablet);
    if (size <= split_size || size <= *bytes) return;
    auto it = stuck.find(tablet);
    if (it != stuck.end() && size < it->second + it->second / 2) return;
    candidate = tablet;
    *bytes = size;
  });
  return candidate;
}

bool PickSplitRow(const TabletState& tablet, const std::vector<LocalityGroupState*>& groups,
                  sstable::TableCache* tables, std::string* row) {
  // The weighted middle of the largest group: every level counts, and
  // level-0 files overlap (with keys written in no order each spans nearly
  // the whole tablet), so no order of files says where half the bytes lie.
  // Each file's index does: where the block that may hold a row's first key
  // lies tells about how many of the file's bytes come before the row.
  // Candidate rows are real rows found at evenly spaced blocks of each file;
  // the one with about half of the tablet's bytes before it wins.
  const LocalityGroupState* largest = nullptr;
  uint64_t largest_bytes = 0;
  for (const LocalityGroupState* g : groups) {
    std::shared_ptr<const GroupView> v = g->current();
    uint64_t bytes = 0;
    for (const auto& level : v->levels) {
      for (const auto& f : level) bytes += f->meta.size;
    }
    if (bytes > largest_bytes) {
      largest = g;
      largest_bytes = bytes;
    }
  }
  if (largest == nullptr) return false;
  std::shared_ptr<const GroupView> view = largest->current();

  // Each file's data blocks with the byte range holding the tablet's rows (a
  // file shared with a split sibling holds the sibling's too). A row's
  // position in a file is taken as the middle of the block that may hold its
  // first key.
  struct Source {
    std::shared_ptr<sstable::TableReader> reader;
    std::vector<sstable::TableReader::BlockInfo> blocks;  // data blocks only
    uint64_t lo = 0, hi = 0;
    uint64_t PositionOf(const std::string& row_key) const {
      std::string key;
      AppendRowPrefix(&key, row_key);
      auto b = std::lower_bound(blocks.begin(), blocks.end(), Slice(key),
                                [](const sstable::TableReader::BlockInfo& info, const Slice& k) {
                                  return Slice(info.separator).compare(k) < 0;
                                });
      return b == blocks.end() ? reader->DataEnd() : b->handle.offset + b->handle.size / 2;
    }
  };
  std::vector<Source> sources;
  uint64_t total = 0;
  for (const auto& level : view->levels) {
    for (const auto& f : level) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          tables->Get(f->meta.number, tablet.table->budget->cache_id());
      if (!reader.ok()) return false;
      Source src{std::move(*reader)};
      if (!src.reader->ListBlocks(&src.blocks).ok()) return false;
      std::erase_if(src.blocks, [](const auto& b) { return b.kind != sstable::BlockKind::kData; });
      src.lo = tablet.start_row.empty() ? 0 : src.PositionOf(tablet.start_row);
      src.hi = tablet.end_row.empty() ? src.reader->DataEnd() : src.PositionOf(tablet.end_row);
      if (src.hi <= src.lo) continue;
      total += src.hi - src.lo;
      sources.push_back(std::move(src));
    }
  }
  constexpr size_t kSamplesPerFile = 32;
  std::vector<std::string> candidates;
  for (const Source& src : sources) {
    std::vector<const sstable::TableReader::BlockInfo*> inside;
    for (const auto& b : src.blocks) {
      if (b.handle.offset + b.handle.size > src.lo && b.handle.offset < src.hi) {
        inside.push_back(&b);
      }
    }
    const size_t step = std::max<size_t>(1, inside.size() / kSamplesPerFile);
    std::unique_ptr<InternalIterator> it = src.reader->NewIterator(/*fill_cache=*/false);
    for (size_t i = 0; i < inside.size(); i += step) {
      // The first key past the block's separator: the next block's first.
      it->Seek(inside[i]->separator);
      ParsedCellKey key;
      if (it->Valid() && ParseCellKey(it->key(), &key) && InsideTablet(key.row, tablet)) {
        candidates.push_back(key.row);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  uint64_t best_distance = UINT64_MAX;
  for (const std::string& candidate : candidates) {
    uint64_t before = 0;
    for (const Source& src : sources) {
      before += std::clamp(src.PositionOf(candidate), src.lo, src.hi) - src.lo;
    }
    const uint64_t distance = 2 * before > total ? 2 * before - total : total - 2 * before;
    if (distance < best_distance) {
      best_distance = distance;
      *row = candidate;
    }
  }
  return best_distance != UINT64_MAX;
}

}  // namespace strata::engine
