// Compaction picking: which level of which locality group needs a compaction
// most, and which files it takes. Leveled: level 0 merges all its files with
// the level-1 files they overlap; a deeper level pushes down the file that
// rewrites the fewest bytes below per byte it moves; a manual compaction
// merges every level into the deepest one holding data at once. See "Compaction" in
// engine/README.md; CompactionJob (engine/compaction_job.h) runs a pick.
//
// Files overlap by rows, not keys: a delete marker hides cells of its row
// that sort after it, so a file holding only those belongs in the same
// compaction.
//
// Thread-safety: TableFile::being_compacted, which the pick reads and
// marks, is guarded by the engine's background mutex; callers hold it.
#ifndef STRATA_ENGINE_COMPACTION_H_
#define STRATA_ENGINE_COMPACTION_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/file_meta.h"
#include "engine/point_read.h"
#include "engine/table_file.h"
#include "engine/tablet.h"
#include "sstable/table_cache.h"
#include "strata/options.h"

namespace strata::engine {

// One compaction: input files of adjacent levels of one group, from
// `level` down to `output_level`, where the outputs go. Two levels, except
// for a manual compaction, which merges every level above the deepest one
// holding data into it at once.
struct Compaction {
  LocalityGroupState* group = nullptr;
  int level = 0;
  int output_level = 1;
  // inputs[i]: the input files of level `level + i`, for every level from
  // `level` to `output_level`.
  std::vector<std::vector<std::shared_ptr<TableFile>>> inputs;
  bool bottommost = false;
  // Unless bottommost or a trivial move: the files below the output level
  // as the inputs were picked, which hold all the older data of the
  // inputs' rows.
  std::shared_ptr<DeeperFiles> deeper;
  // One input, nothing overlapping below, no filter: the file moves down a
  // level by a manifest edit alone.
  bool trivial_move = false;
  // The largest keys of the files of the level below the output level, in
  // key order (empty when there is none): once an output file holds half
  // the target size it ends where one of these files ends, so that a later
  // compaction of it overlaps fewer files below.
  std::vector<std::string> next_level_ends;
};

// Picks, among `groups`, the most urgent compaction whose inputs no running
// compaction holds, and marks its inputs as being compacted; false when
// none is due. With `force` (Engine::Compact), every level above the
// deepest one holding data is merged into it first, all of them in one
// compaction (level-0 files below the trigger included), so that each byte
// is written once.
// Readers `tables` opens (for Compaction::deeper) are charged to the
// group's tenant. REQUIRES: the engine's background mutex held.
bool PickCompaction(const std::vector<LocalityGroupState*>& groups, const EngineOptions& options,
                    sstable::TableCache* tables, bool force, Compaction* compaction);

// Unmarks the compaction's inputs once it has run.
// REQUIRES: the engine's background mutex held.
void ReleaseInputs(const Compaction& compaction);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_COMPACTION_H_
