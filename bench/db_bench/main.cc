// db_bench: named whole-database workloads (fillseq, fillrandom, overwrite,
// readrandom, readmissing, readseq, seekrandom, scansmall) run through Strata
// and, in the same run, through RocksDB with the same sizes and settings,
// printed side by side with the ratio Strata / RocksDB. After overwrite it
// reports write and space amplification of both; after scansmall, the table
// bytes and files each engine read.
//
//   build/bench/db_bench --num=200000              # a quick check
//   build/bench/db_bench --num=200000 --json=db_bench.json   # and every figure as JSON
//   build/bench/db_bench --help                    # every flag
//
// Plain C++ rather than Google Benchmark: each workload is one long phase
// over a whole database, not a loop of identical small operations.
//
// Both engines get the same block cache size, memtable size, compression
// (none or zstd level 3), bloom filter bits (10 per key), block size
// (16 KiB), log on and the same sync choice. Strata stores each key as a row
// with one cell: family "f", qualifier "q", timestamp 1. Write workloads run
// on one engine, then on the other, and an engine settles or closes before
// the other writes, so one engine's background work never overlaps the
// other's timed phase; read workloads run in passes that alternate between
// the two settled databases, so that a slow spell of the machine lands on
// both engines, and report the median pass. scansmall loads its database on
// each engine in turn, then scans in alternating passes the same way.
//
// Every read checks what it finds (keys in order, value sizes, and for
// scansmall the exact values); wrong data ends the program with exit code 1.
//
// --json=FILE also writes every figure of the tables as one JSON document
// (format_version 1), after the last table: "config" (the flags), "rocksdb"
// (whether it was built in), "total_seconds", and "runs", one per
// compression, each with "workloads" (per workload: name, unit: what ops
// counts, "ops", "rows" or "seeks"; and for "strata" and "rocksdb":
// ops_per_sec, mb_per_sec, seconds, ops, found, rows, bytes,
// latency_us {count, p50, p99, p99_9, max} or null for the scans, and
// "passes", ops/s and seconds of every pass of a read workload or
// scansmall), "settle" (seconds and files per level), "live_mb" (the live
// keys' and values' MB that space amplification divides by), "amplification"
// (after overwrite: log, flush, compaction, user and table MB, write
// amplification per log byte and per user byte, space amplification, files
// per level; after settling: space amplification, MB written and write
// amplification through settling) and "scansmall" (table MB and files, both
// scans' rows/s, table MB read and files opened). An engine that did not run
// is null. MB are MiB (2^20 bytes), as in the tables; numbers are written in
// the shortest form that reads back to the same double, so the tables'
// rounded figures can be recomputed from them. scripts/bench-report.sh
// plots them.
//
// The parts: flags.h (the flags and --help), keys.h (keys and values),
// stores.h (the two engines behind one interface), run.h (running the
// workloads on each engine) and report.h (the tables and the JSON document).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "flags.h"
#include "report.h"
#include "run.h"
#include "stores.h"

namespace strata::db_bench {
namespace {

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);

  namespace fs = std::filesystem;
  const bool own_root = f.db.empty();
  const char* bench_dir = std::getenv("STRATA_BENCH_DIR");
  const fs::path base =
      bench_dir != nullptr && *bench_dir != '\0' ? fs::path(bench_dir) : fs::temp_directory_path();
  const fs::path root =
      own_root ? base / ("strata-db_bench-" + std::to_string(::getpid())) : fs::path(f.db);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) Check("cannot create " + root.string() + ": " + ec.message());

  std::printf("db_bench: Strata vs RocksDB\n");
  std::printf("num=%" PRIu64 " reads=%" PRIu64
              " threads=%d key_size=%zu value_size=%zu "
              "cache_mb=%zu write_buffer_mb=%zu sync=%d dir=%s\n",
              f.num, f.reads.value_or(f.num), f.threads, f.key_size, f.value_size, f.cache_mb,
              f.write_buffer_mb, f.sync ? 1 : 0, root.string().c_str());
  std::printf(
      "both: bloom 10 bits/key, 16 KiB blocks, log on, zstd level 3 when compressed; "
      "writes run on one engine, then the other; reads start after both settle "
      "(Strata Engine::Compact, RocksDB CompactRange over all keys) and run in %d "
      "passes alternating between the engines (median pass reported)\n",
      f.passes);
#ifndef STRATA_HAVE_ROCKSDB
  std::printf("RocksDB was not found at build time: Strata only\n");
#endif
  std::fflush(stdout);

  std::vector<Report> reports;
  const auto t0 = Clock::now();
  for (const std::string& c : f.compressions) {
    std::vector<std::unique_ptr<EngineDriver>> engines;
    engines.push_back(std::make_unique<EngineDriver>(f, "strata", &OpenStrataStore,
                                                     (root / ("strata-" + c)).string(), c));
#ifdef STRATA_HAVE_ROCKSDB
    engines.push_back(std::make_unique<EngineDriver>(f, "rocksdb", &OpenRocksStore,
                                                     (root / ("rocksdb-" + c)).string(), c));
#endif
    RunCompression(f, engines);
    Report rep;
    rep.compression = c;
    rep.strata = engines[0]->run();
    if (engines.size() > 1) rep.rocks = engines[1]->run();
    PrintTable(f, c, rep.strata, rep.rocks ? &*rep.rocks : nullptr);
    std::fflush(stdout);
    reports.push_back(std::move(rep));
  }
  const double total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("\ntotal %.0f s. Compare only within this run on this machine.\n", total_seconds);
  std::fflush(stdout);
  if (!f.json.empty()) {
    const std::string doc = JsonDocument(f, reports, total_seconds);
    std::FILE* out = std::fopen(f.json.c_str(), "w");
    if (out == nullptr) Check("cannot create " + f.json + ": " + std::strerror(errno));
    const bool written = std::fwrite(doc.data(), 1, doc.size(), out) == doc.size();
    if (std::fclose(out) != 0 || !written) Check("cannot write " + f.json);
  }

  if (own_root) {
    fs::remove_all(root, ec);
  } else {
    for (const std::string& c : f.compressions) {
      for (const char* engine : {"strata-", "rocksdb-"}) {
        fs::remove_all(root / (engine + c), ec);
        fs::remove_all(root / (engine + c + "-groups"), ec);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace strata::db_bench

int main(int argc, char** argv) { return strata::db_bench::Main(argc, argv); }
