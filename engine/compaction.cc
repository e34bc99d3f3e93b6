#include "engine/compaction.h"

#include <algorithm>
#include <limits>

namespace strata::engine {

namespace {

// Whether the rows of `f` overlap the rows of the keys lo..hi. Compactions
// pick by rows, not keys: a delete marker hides cells of its row that sort
// after it (a row marker every family's cells, a column marker the column's
// older versions), so a file holding only those still belongs with it.
bool RowsOverlap(const FileMeta& f, const std::string& lo, const std::string& hi) {
  return !(EncodedRowOf(f.largest).compare(EncodedRowOf(lo)) < 0 ||
           EncodedRowOf(f.smallest).compare(EncodedRowOf(hi)) > 0);
}

uint64_t LevelBytes(const std::vector<std::shared_ptr<TableFile>>& files) {
  uint64_t n = 0;
  for (const auto& f : files) n += f->meta.size;
  return n;
}

// Fills c->inputs for a compaction of `level` of the group's view into
// `output_level`; false when a running compaction holds what it would need.
// With `whole_level`, every level from `level` to above `output_level`
// gives all its files; otherwise `output_level` is level + 1, and a level
// other than 0 gives the file that rewrites the fewest bytes below.
bool PickInputs(const GroupView& view, int level, int output_level, bool whole_level,
                const EngineOptions& options, sstable::TableCache* tables, Compaction* c) {
  c->level = level;
  c->output_level = output_level;
  c->inputs.assign(output_level - level + 1, {});
  const auto& here = view.levels[level];
  const auto& below = view.levels[output_level];
  auto busy = [](const std::shared_ptr<TableFile>& f) { return f->being_compacted; };
  // The files of `below` that overlap [lo, hi]; false if one is busy.
  auto overlapping = [&](const std::string& lo, const std::string& hi,
                         std::vector<std::shared_ptr<TableFile>>* out) {
    for (const auto& f : below) {
      if (!RowsOverlap(f->meta, lo, hi)) continue;
      if (busy(f)) return false;
      if (out != nullptr) out->push_back(f);
    }
    return true;
  };
  if (level == 0 || whole_level) {
    // Level-0 files overlap one another: all of them go at once, and only
    // one level-0 compaction of a group runs at a time.
    for (int n = level; n < output_level; n++) {
      const auto& files = view.levels[n];
      if (std::any_of(files.begin(), files.end(), busy)) return false;
      c->inputs[n - level] = files;
    }
  } else {
    // The file that rewrites the fewest bytes below per byte it moves down.
    double best = 0;
    for (const auto& f : here) {
      if (busy(f)) continue;
      uint64_t below_bytes = 0;
      bool free = true;
      for (const auto& b : below) {
        if (!RowsOverlap(b->meta, f->meta.smallest, f->meta.largest)) continue;
        if (busy(b)) free = false;
        below_bytes += b->meta.size;
      }
      if (!free) continue;
      const double ratio =
          static_cast<double>(below_bytes) / static_cast<double>(std::max<uint64_t>(f->meta.size, 1));
      if (c->inputs[0].empty() || ratio < best) {
        best = ratio;
        c->inputs[0] = {f};
      }
    }
    if (c->inputs[0].empty()) return false;
  }
  std::string lo = c->inputs[0].front()->meta.smallest;
  std::string hi = c->inputs[0].front()->meta.largest;
  for (size_t i = 0; i + 1 < c->inputs.size(); i++) {
    for (const auto& f : c->inputs[i]) {
      lo = std::min(lo, f->meta.smallest);
      hi = std::max(hi, f->meta.largest);
    }
  }
  if (!overlapping(lo, hi, &c->inputs.back())) return false;
  for (const auto& f : c->inputs.back()) {
    lo = std::min(lo, f->meta.smallest);
    hi = std::max(hi, f->meta.largest);
  }
  // Nothing deeper overlaps the output: delete markers can go. (A running
  // compaction cannot move data into this range: it would hold one of these
  // inputs.)
  c->bottommost = true;
  for (int n = output_level + 1; n < kNumLevels && c->bottommost; n++) {
    for (const auto& f : view.levels[n]) {
      if (RowsOverlap(f->meta, lo, hi)) c->bottommost = false;
    }
  }
  // A file alone, with nothing to merge with below, needs no rewrite —
  // unless a filter must see its data, or it carries delete markers to the
  // bottom (checked in CompactionJob), where a rewrite drops them.
  c->trivial_move = c->inputs.size() == 2 && c->inputs[0].size() == 1 && c->inputs[1].empty() &&
                    CompactionFilterOf(*c->group->tablet->table, options) == nullptr;
  if (!c->bottommost && !c->trivial_move && output_level + 1 < kNumLevels) {
    for (const auto& f : view.levels[output_level + 1]) {
      if (RowsOverlap(f->meta, lo, hi)) c->next_level_ends.push_back(f->meta.largest);
    }
  }
  if (!c->bottommost && !c->trivial_move) {
    // A row that no deeper file holds is at the bottom all the same.
    c->deeper = std::make_shared<DeeperFiles>(view, output_level + 1, tables,
                                              c->group->tablet->table->budget->cache_id());
  }
  return true;
}

}  // namespace

bool PickCompaction(const std::vector<LocalityGroupState*>& groups, const EngineOptions& options,
                    sstable::TableCache* tables, bool force, Compaction* compaction) {
  // Every (group, level) that needs work, most urgent first: level 0 by
  // files over its trigger, deeper levels by bytes over their size.
  struct Candidate {
    double score;
    LocalityGroupState* group;
    std::shared_ptr<const GroupView> view;
    int level;
    int output_level;
    bool whole_level;
  };
  std::vector<Candidate> candidates;
  for (LocalityGroupState* g : groups) {
    std::shared_ptr<const GroupView> view = g->current();
    if (force) {
      // A manual compaction merges every level into the deepest one that
      // holds data (level 1 at least), so each key ends up in one file. It
      // takes every level above that one whole, in one compaction: each byte
      // is written once, where going a level at a time (as RocksDB's
      // CompactRange does) writes the upper levels' data once per level it
      // passes, and pushing file by file rewrites some files below several
      // times.
      int deepest = 1;
      for (int n = kNumLevels - 1; n > 1 && deepest == 1; n--) {
        if (!view->levels[n].empty()) deepest = n;
      }
      int shallowest = 0;
      while (shallowest < deepest && view->levels[shallowest].empty()) shallowest++;
      if (shallowest < deepest) {
        // Before any compaction for size: those come after, and would
        // rewrite what this one merges anyway.
        candidates.push_back({std::numeric_limits<double>::infinity(), g, view, shallowest, deepest,
                              /*whole_level=*/true});
        continue;
      }
    }
    if (static_cast<int>(view->levels[0].size()) >= options.level0_compaction_trigger) {
      candidates.push_back(
          {static_cast<double>(view->levels[0].size()) / options.level0_compaction_trigger, g, view,
           0, 1, /*whole_level=*/false});
    }
    uint64_t max_bytes = options.level1_max_bytes;
    for (int n = 1; n < kNumLevels - 1; n++, max_bytes *= 10) {
      const uint64_t bytes = LevelBytes(view->levels[n]);
      if (bytes > max_bytes) {
        candidates.push_back(
            {static_cast<double>(bytes) / max_bytes, g, view, n, n + 1, /*whole_level=*/false});
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  for (const Candidate& c : candidates) {
    *compaction = Compaction();
    compaction->group = c.group;
    if (!PickInputs(*c.view, c.level, c.output_level, c.whole_level, options, tables, compaction)) {
      continue;
    }
    for (const auto& inputs : compaction->inputs) {
      for (const auto& f : inputs) f->being_compacted = true;
    }
    return true;
  }
  *compaction = Compaction();
  return false;
}

void ReleaseInputs(const Compaction& compaction) {
  for (const auto& inputs : compaction.inputs) {
    for (const auto& f : inputs) f->being_compacted = false;
  }
}

}  // namespace strata::engine
