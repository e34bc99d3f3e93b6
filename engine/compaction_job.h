// CompactionJob: runs one picked Compaction (engine/compaction.h). A trivial
// move re-files its one input a level down by a manifest edit alone; any
// other compaction merges its inputs through a CompactionStream (which drops
// what no reader can see and runs the compaction filter) into output files
// of about target_file_size, cut only between rows, and then installs them
// in place of the inputs (VersionSet::InstallCompaction). See "Compaction"
// in engine/README.md.
//
// Thread-compatible: each compaction thread runs its own job; jobs that run
// at once never share an input (the pick marks them).
#ifndef STRATA_ENGINE_COMPACTION_JOB_H_
#define STRATA_ENGINE_COMPACTION_JOB_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/latency_recorder.h"
#include "common/rate_limiter.h"
#include "engine/compaction.h"
#include "engine/file_meta.h"
#include "engine/live_files.h"
#include "engine/version_set.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata::engine {

class CompactionJob {
 public:
  // What a compaction uses of the engine; everything must outlive the job.
  struct Context {
    const EngineOptions* options = nullptr;  // target_file_size, compaction_filter
    FileSystem* fs = nullptr;
    VersionSet* versions = nullptr;
    LiveFiles* files = nullptr;
    // Paces output writes; null when compaction_rate_limit is 0.
    RateLimiter* limiter = nullptr;
    // Set when the engine closes: the job stops early with Aborted.
    const std::atomic<bool>* closing = nullptr;
    // Counters a job adds to once its result is recorded and not orphaned by
    // a drop (a split after the edit still counts). Relaxed.
    std::atomic<uint64_t>* compactions = nullptr;
    std::atomic<uint64_t>* trivial_moves = nullptr;
    std::atomic<uint64_t>* bytes_read = nullptr;
    std::atomic<uint64_t>* bytes_written = nullptr;
    // How long each counted compaction took (trivial moves left out).
    LatencyRecorder* latency = nullptr;
    Clock* clock = nullptr;
  };

  CompactionJob(const Context& context, Compaction* compaction) : ctx_(context), c_(compaction) {}
  CompactionJob(const CompactionJob&) = delete;
  CompactionJob& operator=(const CompactionJob&) = delete;

  // Runs the compaction. OK without a result when the table was dropped or
  // the tablet split away meanwhile. An error while writing the outputs
  // leaves none of them on disk, a failed manifest append leaves them for
  // the next open to judge, and a failure to pin them is returned after
  // they are shown.
  Status Run();

 private:
  Status MoveDown();
  // Merges the inputs into *outputs, pinned when the group is resident.
  Status WriteOutputs(std::vector<FileMeta>* outputs, bool* pinned);

  const Context ctx_;
  Compaction* const c_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_COMPACTION_JOB_H_
