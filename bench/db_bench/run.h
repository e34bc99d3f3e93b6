// Running the workloads: PhaseResult, what one timed phase measured;
// EngineDriver, one engine's side of a run of --benchmarks and everything it
// measured (EngineRun); and RunCompression, which runs the workload list on
// every engine for one compression, interleaving the engines' read passes.
// Thread-compatible: an EngineDriver is used by one thread, which starts and
// joins the workload threads of each phase.
#ifndef STRATA_BENCH_DB_BENCH_RUN_H_
#define STRATA_BENCH_DB_BENCH_RUN_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "flags.h"
#include "keys.h"
#include "stores.h"

namespace strata::db_bench {

using Clock = std::chrono::steady_clock;

struct PhaseResult {
  bool ran = false;
  double seconds = 0;
  uint64_t ops = 0;
  uint64_t found = 0;            // reads that found their key, seeks that landed on theirs
  uint64_t rows = 0;             // rows (keys) the phase read
  uint64_t bytes = 0;            // key + value bytes written, or read
  strata::Histogram latency_us;  // of one call; empty for the scans

  double OpsPerSec() const { return seconds > 0 ? ops / seconds : 0; }
  double MBPerSec() const { return seconds > 0 ? bytes / 1048576.0 / seconds : 0; }
};

struct AmpResult {
  bool ran = false;
  StoreStats after_overwrite;
  StoreStats after_settle;
  bool settled = false;
  uint64_t user_bytes = 0;     // key + value bytes of every write since the fill
  uint64_t logical_bytes = 0;  // key + value bytes of the live keys
};

// One pass of scansmall: the timed scan of the small family, then one of the
// big family, and what each read from table files.
struct GroupPass {
  PhaseResult small;
  ReadIo small_io;
  PhaseResult big;
  ReadIo big_io;
};

// scansmall, beyond its timed scan of the small family.
struct GroupScanResult {
  bool ran = false;
  StoreStats settled;  // after writing and settling both families
  ReadIo small_io;     // what the median pass's scan of the small family read
  PhaseResult big;     // the median pass's scan of the big family after it
  ReadIo big_io;
};

struct EngineRun {
  std::vector<PhaseResult> phases;  // one per --benchmarks entry (a read workload's median pass)
  std::vector<std::vector<PhaseResult>> passes;  // every pass of each read workload
  AmpResult amp;
  GroupScanResult group;
  double settle_seconds = -1;
  std::string settle_shape;  // files per level after settling
};

// Unless `err` is empty, prints it to stderr and ends the program with exit
// code 1.
void Check(const std::string& err);

// One engine's side of a run: its database and what each workload measured.
// Write workloads and scansmall run on one engine, then on the other; the read
// workloads run in passes that alternate between the engines (see RunCompression).
class EngineDriver {
 public:
  EngineDriver(const Flags& f, const char* engine_name, OpenFn open, std::string dir,
               const std::string& compression)
      : f_(f),
        engine_name_(engine_name),
        open_(open),
        dir_(std::move(dir)),
        compression_(compression),
        zstd_(compression == "zstd"),
        values_(f.seed, f.value_size),
        reads_(f.reads.value_or(f.num)),
        entry_bytes_(f.key_size + f.value_size) {
    run_.phases.resize(f.benchmarks.size());
    run_.passes.resize(f.benchmarks.size());
  }

  const char* name() const { return engine_name_; }
  const EngineRun& run() const { return run_; }

  // Runs workload `i` of --benchmarks: a write workload or scansmall.
  void RunSequential(size_t i);

  // scansmall (workload `i`): writes and settles its database, which stays
  // on disk, closed, for the passes.
  void LoadGroupScan(size_t i);

  // One pass of scansmall; LoadGroupScan must have run.
  void RunGroupScanPass(size_t i, int pass);

  // After the last pass of scansmall: the median pass (by the small scan's
  // rows/s) is its result; removes its database.
  void FinishGroupScan(size_t i);

  // Makes sure there is a database with every key, settled since its last
  // write; `bench` names the read workload that needs it.
  void ReadyForReads(const std::string& bench);

  // One pass of read workload `i`; ReadyForReads must have run.
  void RunReadPass(size_t i, int pass);

  // After the last pass of read workload `i`: its result is the median pass
  // by ops/s (the lower of the two middle ones for an even count).
  void FinishReads(size_t i);

  // Closes the database and removes its files.
  void Close();

 private:
  // The index of the median pass by ops/s (the lower of the two middle ones
  // for an even count); passes.size() when there is none.
  static size_t MedianPass(const std::vector<PhaseResult>& passes);

  StoreSpec GroupSpec() const;

  std::string Label(const std::string& bench) const;

  static void Done(const std::string& label, const PhaseResult& r);

  void Fresh();

  // fillrandom: every key once, in an order shuffled by --seed.
  PhaseResult FillRandom(const std::string& label);

  const Flags& f_;
  const char* const engine_name_;
  const OpenFn open_;
  const std::string dir_;
  const std::string compression_;
  const bool zstd_;
  const ValueSource values_;
  const uint64_t reads_;
  const uint64_t entry_bytes_;
  EngineRun run_;
  std::unique_ptr<Store> store_;
  bool dirty_ = false;  // written since the last settle
  uint64_t user_bytes_ = 0;
  // scansmall: the file system its stores count reads through (it outlives
  // them), and every pass.
  std::unique_ptr<CountingFileSystem> groups_fs_;
  std::vector<GroupPass> group_passes_;
};

// Runs --benchmarks for one compression on every engine (Strata, then RocksDB
// when it was built in). Each maximal run of write workloads runs on one
// engine, then on the next; an engine whose writes are followed by reads
// settles before the next engine writes, one whose writes are not closes, so
// no engine's background work overlaps another's timed phase. Each maximal run
// of read workloads runs --passes times: within a pass, every workload runs on
// each engine back to back, and which engine goes first alternates from pass
// to pass. scansmall loads its database on each engine, one after the other,
// then runs --passes passes the same way.
void RunCompression(const Flags& f, std::vector<std::unique_ptr<EngineDriver>>& engines);

}  // namespace strata::db_bench

#endif  // STRATA_BENCH_DB_BENCH_RUN_H_
