// The command line of db_bench: its usage text (--help) and parsing; see flags.h.
#include "flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace strata::db_bench {
namespace {

constexpr char kHelp[] = R"(db_bench: Strata and RocksDB side by side on named workloads.

Usage: db_bench [--flag=value | --flag value]...

Workloads (--benchmarks, run in the order given, for each compression):
  fillseq      write --num keys in ascending order into a fresh database
  fillrandom   write --num keys, each once, in random order into a fresh database
  overwrite    write --num random keys (uniform, with repeats) over the current
               database (the fillrandom one; loaded untimed if there is none);
               then reports write and space amplification
  readrandom   --reads point reads of random keys that exist
  readmissing  --reads point reads of random keys that do not exist (they sort
               between existing keys, so only the bloom filters can rule them out)
  readseq      a forward scan over every key, by each of --threads (Strata: one
               Table::Scan of the whole table; RocksDB: one Iterator from
               SeekToFirst); reports rows/s and MB/s of key + value
  seekrandom   --reads seeks to random keys that exist, each followed by 10
               Next() calls (11 rows, fewer near the last key); every seek is a
               new scan: a Strata Table::Scan with start_row = the key, a new
               RocksDB Iterator and Seek (neither engine reuses an iterator;
               seekreuse does); reports seeks/s
  seekreuse    seekrandom with one iterator per thread, made once and sought
               again for every seek (Strata: RowIterator::Seek; RocksDB:
               Iterator::Seek), as db_bench's --reuse_iterator
  scansmall    a database of its own: one table with locality group "big"
               (family big, --value_size byte values) and locality group
               "small" (family small, 8-byte values), both on each of --num
               rows; written in key order (untimed) and settled; then
               --passes passes, each of which opens the database (cold block
               cache), scans family small alone in one thread (ScanSpec
               filter on that family), then family big, and closes it.
               RocksDB: column families big and small, one iterator over
               each. Reports the small scan's rows/s and, for both scans, the
               table bytes and files each engine read, to show which files
               each group's scan reads.
readrandom, readmissing, readseq, seekrandom and seekreuse use the database the workloads
before them left (loaded untimed with fillrandom when there is none). Before the first read phase after
writes both engines settle the same way: Strata with Engine::Compact(),
RocksDB with CompactRange over every key.

Order: write workloads run on Strata, then on RocksDB (an engine settles, or
closes when nothing is read after, before the other one writes). Each run of
consecutive read workloads then goes --passes times: in each pass every
workload runs on both engines back to back, Strata first in odd passes and
RocksDB first in even ones, so a slow spell of the machine hits both.
scansmall loads its database on Strata, then on RocksDB, then goes --passes
times the same way. A read workload and scansmall report their median pass;
the per-pass ratios follow the table.

Flags:
  --num N              keys in the database (default 1000000)
  --reads N            operations of readrandom, readmissing, seekrandom and seekreuse
                       (default: --num)
  --threads N          client threads per workload (default 1)
  --compression C      none | zstd (default: both, one after the other)
  --value_size N       bytes per value (default 100); values compress to about
                       half, as db_bench's --compression_ratio=0.5
  --key_size N         bytes per key (default 16): zero-padded decimal
  --cache_mb N         block cache of each engine in MiB (default 64)
  --write_buffer_mb N  memtable size of each engine in MiB (default 32)
  --sync[=0|1]         fdatasync the log on every write (default off)
  --db DIR             where the databases go (default: a new directory under
                       $STRATA_BENCH_DIR, or the system temp dir); what this
                       program creates is removed at the end
  --benchmarks LIST    comma list (default fillseq,fillrandom,overwrite,
                       readrandom,readmissing,readseq,seekrandom,seekreuse,
                       scansmall)
  --seed N             seed of the key orders and values (default 301)
  --passes N           passes of each read workload and of scansmall on each
                       engine (default 3; every pass repeats the same operations)
  --json FILE          also write every figure of the tables (per compression and
                       workload, both engines: ops/s, MB/s, p50/p99/p99.9 latency,
                       each pass; write and space amplification; table MB) to FILE
                       as one JSON document, after the last table
  --help               this text

Same for both engines: block cache size, memtable size, compression (zstd at
level 3), bloom filter 10 bits per key, 16 KiB blocks, log on, --sync. Level
shape as Strata's defaults: compaction at 4 level-0 files, level 1 of 64 MiB,
x10 per level, 32 MiB output files. RocksDB keeps its default background jobs.

Reported per workload: ops/s (rows/s for readseq and scansmall, seeks/s for
seekrandom); MB/s of key + value bytes (as db_bench: every write, and every
key and value read); p50/p99 latency of one call in microseconds (of one seek
and its 11 rows for seekrandom; none for the scans). Ratios are Strata /
RocksDB. The figures depend on the machine, its disk and whatever else runs on
it: compare the two engines only within one run on one machine, never figures
from different runs.
)";

bool ParseUint(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c == ',' || c == '_') continue;  // allow 1,000,000 and 1_000_000
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

std::vector<std::string> SplitComma(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t pos = s.find(',');
    std::string_view part = s.substr(0, pos);
    if (!part.empty()) out.emplace_back(part);
    if (pos == std::string_view::npos) break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr, "db_bench: %s\n(run with --help for the flags)\n", error.c_str());
  std::exit(2);
}

}  // namespace

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) Usage("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    auto need = [&]() -> std::string {
      if (value) return *value;
      if (i + 1 >= argc) Usage("--" + name + " needs a value");
      return argv[++i];
    };
    auto need_uint = [&](uint64_t lo) -> uint64_t {
      const std::string v = need();
      uint64_t n = 0;
      if (!ParseUint(v, &n) || n < lo) {
        Usage("--" + name + "=" + v + " is not a whole number >= " + std::to_string(lo));
      }
      return n;
    };
    if (name == "num") {
      f.num = need_uint(1);
    } else if (name == "reads") {
      f.reads = need_uint(1);
    } else if (name == "threads") {
      f.threads = static_cast<int>(std::min<uint64_t>(need_uint(1), 1024));
    } else if (name == "compression") {
      const std::string v = need();
      if (v != "none" && v != "zstd") Usage("--compression must be none or zstd, not " + v);
      f.compressions = {v};
    } else if (name == "value_size") {
      f.value_size = need_uint(1);
    } else if (name == "key_size") {
      f.key_size = need_uint(2);
    } else if (name == "cache_mb") {
      f.cache_mb = need_uint(1);
    } else if (name == "write_buffer_mb") {
      f.write_buffer_mb = need_uint(1);
    } else if (name == "sync") {
      if (!value) {
        f.sync = true;
      } else if (*value == "1" || *value == "true") {
        f.sync = true;
      } else if (*value == "0" || *value == "false") {
        f.sync = false;
      } else {
        Usage("--sync takes 0 or 1, not " + *value);
      }
    } else if (name == "db") {
      f.db = need();
    } else if (name == "benchmarks") {
      f.benchmarks = SplitComma(need());
      for (const auto& b : f.benchmarks) {
        if (std::find(kWorkloads.begin(), kWorkloads.end(), b) == kWorkloads.end()) {
          Usage("unknown benchmark '" + b + "'");
        }
      }
      if (f.benchmarks.empty()) Usage("--benchmarks is empty");
    } else if (name == "seed") {
      f.seed = need_uint(0);
    } else if (name == "passes") {
      f.passes = static_cast<int>(std::min<uint64_t>(need_uint(1), 100));
    } else if (name == "json") {
      f.json = need();
      if (f.json.empty()) Usage("--json needs a file name");
    } else {
      Usage("unknown flag --" + name);
    }
  }
  // Keys are key_size - 1 digits plus a suffix byte; the index must fit.
  if (f.key_size < 20) {
    uint64_t limit = 1;
    for (size_t d = 0; d + 1 < f.key_size; d++) limit *= 10;
    if (f.num > limit) {
      Usage("--num=" + std::to_string(f.num) +
            " does not fit in --key_size=" + std::to_string(f.key_size));
    }
  }
  return f;
}

}  // namespace strata::db_bench
