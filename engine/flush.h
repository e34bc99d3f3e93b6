// FlushJob: writes the oldest immutable memtable of one locality group to a
// level-0 SSTable and installs it — the file shown in the group's view in
// the memtable's place, the flush recorded in the manifest, the log floor
// raised and the log segments below it released. See "Flush" in
// engine/README.md.
//
// What the memtable itself hides (older entries at one timestamp, versions
// under its own delete markers) is not written; the markers are, where older
// files may hold what they hide. A cell written and deleted within one
// memtable (a transaction's lock) thus leaves nothing, and a memtable that
// leaves nothing makes no file. The compaction filter is not run.
//
// Thread-compatible: the engine's flush thread runs one job at a time.
#ifndef STRATA_ENGINE_FLUSH_H_
#define STRATA_ENGINE_FLUSH_H_

#include <atomic>
#include <cstdint>

#include "common/cell_key.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/latency_recorder.h"
#include "engine/live_files.h"
#include "engine/tablet.h"
#include "engine/version_set.h"
#include "strata/status.h"
#include "wal/log_writer.h"

namespace strata::engine {

class FlushJob {
 public:
  // What a flush uses of the engine; everything must outlive the job.
  struct Context {
    FileSystem* fs = nullptr;
    VersionSet* versions = nullptr;
    LiveFiles* files = nullptr;
    wal::LogWriter* log = nullptr;
    // The engine's visible sequence (EngineCore::visible_sequence_).
    const std::atomic<SequenceNumber>* visible_sequence = nullptr;
    // Counters a flush adds to once it is recorded (shown, or orphaned by a
    // drop that came after the edit): flushes, and bytes written.
    // Relaxed.
    std::atomic<uint64_t>* flushes = nullptr;
    std::atomic<uint64_t>* bytes_written = nullptr;
    // How long each recorded flush took, from its start to its manifest edit.
    LatencyRecorder* latency = nullptr;
    Clock* clock = nullptr;
  };

  FlushJob(const Context& context, LocalityGroupState* group) : ctx_(context), group_(group) {}
  FlushJob(const FlushJob&) = delete;
  FlushJob& operator=(const FlushJob&) = delete;

  // Flushes the group's oldest immutable memtable, if it has one. OK without
  // a flush when the table was dropped or the tablet split away meanwhile.
  Status Run();

 private:
  // Writes the entries of `it` (the memtable) to a new SSTable, as a flush
  // keeps them: `older` holds every file of the group with older data, and
  // the delete markers of rows none of them holds are dropped. Fills *meta
  // (no entries: no file is left).
  Status WriteFile(InternalIterator* it, DeeperFiles* older, FileMeta* meta);

  const Context ctx_;
  LocalityGroupState* const group_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_FLUSH_H_
