// The command line of db_bench (main.cc): the workload names, the Flags
// every part of the program reads, and their parsing, which prints --help and
// ends the program on a bad flag. Thread-compatible.
#ifndef STRATA_BENCH_DB_BENCH_FLAGS_H_
#define STRATA_BENCH_DB_BENCH_FLAGS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::db_bench {

constexpr std::array<const char*, 9> kWorkloads = {"fillseq",    "fillrandom",  "overwrite",
                                                   "readrandom", "readmissing", "readseq",
                                                   "seekrandom", "seekreuse",   "scansmall"};

// seekrandom, seekreuse: Next() calls after each seek, as db_bench's --seek_nexts.
constexpr uint64_t kSeekNexts = 10;
// scansmall: bytes of each value of the small family (decimal digits of the row number).
constexpr size_t kSmallValueSize = 8;

struct Flags {
  uint64_t num = 1000000;
  std::optional<uint64_t> reads;  // default: num
  int threads = 1;
  std::vector<std::string> compressions = {"none", "zstd"};
  size_t value_size = 100;
  size_t key_size = 16;
  size_t cache_mb = 64;
  size_t write_buffer_mb = 32;
  bool sync = false;
  std::string db;  // empty: a fresh directory under the system temp dir
  std::vector<std::string> benchmarks{kWorkloads.begin(), kWorkloads.end()};
  uint64_t seed = 301;
  int passes = 3;    // of each read workload on each engine
  std::string json;  // --json: where the JSON document goes; empty: none
};

// Parses the command line. --help prints the usage text and exits 0; a bad
// flag prints the error to stderr and exits 2.
Flags ParseFlags(int argc, char** argv);

}  // namespace strata::db_bench

#endif  // STRATA_BENCH_DB_BENCH_FLAGS_H_
