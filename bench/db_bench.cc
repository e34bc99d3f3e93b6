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
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/histogram.h"
#include "common/mutex.h"
#include "common/random.h"
#include "strata/engine.h"
#include "util/forwarding_fs.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iostats_context.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// ---- Flags --------------------------------------------------------------------

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
      Usage("--num=" + std::to_string(f.num) + " does not fit in --key_size=" +
            std::to_string(f.key_size));
    }
  }
  return f;
}

// ---- Keys and values ------------------------------------------------------------

// Key `i` is i in key_size - 1 zero-padded decimal digits and then '0' for a
// key that is written or '1' for one that never is: a missing key sorts right
// after an existing one.
void MakeKey(const Flags& f, uint64_t i, bool missing, std::string* key) {
  key->resize(f.key_size + 1);  // snprintf writes a terminating NUL
  std::snprintf(key->data(), key->size(), "%0*" PRIu64 "%c", static_cast<int>(f.key_size - 1),
                i, missing ? '1' : '0');
  key->resize(f.key_size);
}

// Adds one to the decimal number in the first `digits` bytes of *s; 99..9
// wraps to 00..0.
void IncrementDigits(std::string* s, size_t digits) {
  for (size_t p = digits; p-- > 0;) {
    char& c = (*s)[p];
    if (c != '9') {
      c++;
      return;
    }
    c = '0';
  }
}

// Turns key i (an existing one) into key i + 1.
void NextKey(const Flags& f, std::string* key) { IncrementDigits(key, f.key_size - 1); }

// The small family's value of row i: its number's last 8 decimal digits.
void MakeSmallValue(uint64_t i, std::string* value) {
  char buf[kSmallValueSize + 1];
  std::snprintf(buf, sizeof(buf), "%0*" PRIu64, static_cast<int>(kSmallValueSize), i % 100000000);
  value->assign(buf, kSmallValueSize);
}

// The big family's value of row i picks its start in the ValueSource by this.
uint64_t BigValuePos(uint64_t i) { return i * 7919; }

// Values compress to about half, as db_bench with --compression_ratio=0.5:
// each 100-byte piece repeats 50 random bytes.
class ValueSource {
 public:
  ValueSource(uint64_t seed, size_t value_size) {
    strata::Random rnd(seed);
    const size_t len = std::max<size_t>(1 << 20, value_size * 2);
    while (data_.size() < len) {
      const std::string raw = rnd.RandomLetters(50);
      for (int r = 0; r < 2; r++) data_ += raw;
    }
    value_size_ = value_size;
  }
  // A value that starts at a position picked by `pos`.
  std::string_view Get(uint64_t pos) const {
    const size_t start = static_cast<size_t>(pos % (data_.size() - value_size_));
    return std::string_view(data_).substr(start, value_size_);
  }

 private:
  std::string data_;
  size_t value_size_ = 0;
};

// ---- The two engines behind one interface ---------------------------------------

struct StoreStats {
  uint64_t log_bytes = 0;
  uint64_t flush_bytes = 0;
  uint64_t compaction_bytes = 0;
  uint64_t table_bytes = 0;
  uint64_t table_files = 0;
  std::string level_files;  // "L0:3 L1:5 ..."
};

// The shape of a store's database.
enum class Layout {
  kOneFamily,  // Strata: family "f" in group "default"; RocksDB: the default column family
  kTwoGroups,  // scansmall: families "big" and "small", each in a locality group (RocksDB:
               // a column family) of its own
};

// What a cursor walks: the one family of kOneFamily, or one of kTwoGroups.
enum class Family { kMain, kBig, kSmall };

// What was read from table files since Store::ResetReadIo.
struct ReadIo {
  bool known = false;           // whether the store counts reads at all
  uint64_t bytes = 0;           // bytes read from table files
  uint64_t opens = 0;           // table files opened
  bool per_file = false;        // whether `files` is known
  std::set<std::string> files;  // names of the table files read from
};

// Counts the reads of table files (*.sst) that pass through it: files opened,
// and bytes read from each file. Thread-safe.
class CountingFileSystem final : public strata::test::ForwardingFileSystem {
 public:
  CountingFileSystem() = default;
  CountingFileSystem(const CountingFileSystem&) = delete;
  CountingFileSystem& operator=(const CountingFileSystem&) = delete;

  strata::Status NewRandomAccessFile(const std::string& path,
                                     std::unique_ptr<strata::RandomAccessFile>* result) override {
    std::unique_ptr<strata::RandomAccessFile> file;
    STRATA_RETURN_IF_ERROR(base_->NewRandomAccessFile(path, &file));
    if (!IsTableFile(path)) {
      *result = std::move(file);
      return strata::Status::OK();
    }
    // Relaxed: a plain event count, read once the counted scan has returned.
    opens_.fetch_add(1, std::memory_order_relaxed);
    *result = std::make_unique<CountingFile>(std::move(file), CounterFor(path));
    return strata::Status::OK();
  }

  void Reset() {
    opens_.store(0, std::memory_order_relaxed);
    strata::MutexLock l(&mu_);
    for (auto& [path, bytes] : bytes_) bytes->store(0, std::memory_order_relaxed);
  }

  ReadIo Get() {
    ReadIo io;
    io.known = true;
    io.per_file = true;
    io.opens = opens_.load(std::memory_order_relaxed);
    strata::MutexLock l(&mu_);
    for (const auto& [path, bytes] : bytes_) {
      const uint64_t n = bytes->load(std::memory_order_relaxed);
      if (n == 0) continue;
      io.bytes += n;
      io.files.insert(path.substr(path.find_last_of('/') + 1));
    }
    return io;
  }

 private:
  class CountingFile final : public strata::RandomAccessFile {
   public:
    CountingFile(std::unique_ptr<strata::RandomAccessFile> base, std::atomic<uint64_t>* bytes)
        : base_(std::move(base)), bytes_(bytes) {}
    strata::Status Read(uint64_t offset, size_t n, strata::Slice* result,
                        char* scratch) const override {
      strata::Status s = base_->Read(offset, n, result, scratch);
      // Relaxed: a plain byte count, read once the counted scan has returned.
      if (s.ok()) bytes_->fetch_add(result->size(), std::memory_order_relaxed);
      return s;
    }
    strata::Result<uint64_t> Size() const override { return base_->Size(); }

   private:
    const std::unique_ptr<strata::RandomAccessFile> base_;
    std::atomic<uint64_t>* const bytes_;
  };

  static bool IsTableFile(const std::string& path) {
    return path.size() > 4 && path.compare(path.size() - 4, 4, ".sst") == 0;
  }

  // The counter of `path`; it lives as long as this object.
  std::atomic<uint64_t>* CounterFor(const std::string& path) {
    strata::MutexLock l(&mu_);
    auto& slot = bytes_[path];
    if (!slot) slot = std::make_unique<std::atomic<uint64_t>>(0);
    return slot.get();
  }

  std::atomic<uint64_t> opens_{0};
  strata::Mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<std::atomic<uint64_t>>> bytes_ GUARDED_BY(mu_);
};

struct StoreSpec {
  std::string dir;
  bool zstd = false;
  Layout layout = Layout::kOneFamily;
  // Strata only: the engine's file system, which counts table reads for
  // Store::GetReadIo; nullptr = the local file system, uncounted.
  CountingFileSystem* fs = nullptr;
};

// A forward walk over the rows (Strata) or keys (RocksDB) of one family,
// each holding one value. Errors, including a Strata row that does not hold
// exactly one cell of the family, make it !Valid() and show in error().
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual bool Valid() const = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // To the first key >= `key`, as a new cursor there would stand.
  virtual void Seek(std::string_view key) = 0;
  // REQUIRES: Valid(). Both valid until the cursor moves.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Empty when there was no error.
  virtual std::string error() const = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // Each returns an empty string on success, else the error.
  // REQUIRES (Put, Get): Layout::kOneFamily.
  virtual std::string Put(std::string_view key, std::string_view value) = 0;
  virtual std::string Get(std::string_view key, size_t value_size, bool* found) = 0;
  // Writes both families of one row in one atomic write.
  // REQUIRES: Layout::kTwoGroups.
  virtual std::string PutRow(std::string_view key, std::string_view big,
                             std::string_view small) = 0;
  // A cursor over `family` from the first key >= `start` (empty: from the first).
  virtual std::string NewCursor(Family family, std::string_view start,
                                std::unique_ptr<Cursor>* cursor) = 0;
  // Flushes and compacts so reads start from the same shape on both engines.
  virtual std::string Settle() = 0;
  virtual StoreStats Stats() = 0;
  // Table-file reads are counted from here on, by the calling thread for
  // RocksDB (its IOStatsContext is per thread), by every thread for Strata.
  virtual void ResetReadIo() = 0;
  virtual ReadIo GetReadIo() = 0;
  virtual std::string Close() = 0;
};

using OpenFn = std::unique_ptr<Store> (*)(const Flags&, const StoreSpec&, std::string*);

std::string LevelString(const std::vector<uint64_t>& files) {
  std::string s;
  for (size_t l = 0; l < files.size(); l++) {
    if (files[l] == 0) continue;
    if (!s.empty()) s += ' ';
    s += "L" + std::to_string(l) + ":" + std::to_string(files[l]);
  }
  return s.empty() ? "none" : s;
}

class StrataCursor final : public Cursor {
 public:
  StrataCursor(std::unique_ptr<strata::RowIterator> it, std::string family)
      : it_(std::move(it)), family_(std::move(family)) {
    CheckRow();
  }

  bool Valid() const override { return error_.empty() && it_->Valid(); }
  void Next() override {
    it_->Next();
    CheckRow();
  }
  void Seek(std::string_view key) override {
    it_->Seek(key);
    CheckRow();
  }
  std::string_view key() const override { return it_->row(); }
  std::string_view value() const override { return it_->cell_views()[0].value; }
  std::string error() const override {
    if (!error_.empty()) return error_;
    const strata::Status s = it_->status();
    return s.ok() ? std::string() : "scan: " + s.ToString();
  }

 private:
  void CheckRow() {
    if (!it_->Valid()) return;
    const std::vector<strata::CellView>& cells = it_->cell_views();
    if (cells.size() != 1 || cells[0].family != family_) {
      error_ = "scan: row '" + std::string(it_->row()) + "' has " + std::to_string(cells.size()) +
               " cells" +
               (cells.empty() ? std::string()
                              : ", the first of family " + std::string(cells[0].family)) +
               "; expected one cell of family " + family_;
    }
  }

  const std::unique_ptr<strata::RowIterator> it_;
  const std::string family_;
  std::string error_;
};

class StrataStore final : public Store {
 public:
  // Creates the tenant and table when they are missing, so it also reopens.
  static std::unique_ptr<Store> Open(const Flags& f, const StoreSpec& spec, std::string* error) {
    strata::EngineOptions o;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.block_cache_size = f.cache_mb << 20;
    o.file_system = spec.fs;
    auto e = strata::Engine::Open(spec.dir, o);
    if (!e.ok()) {
      *error = "Engine::Open: " + e.status().ToString();
      return nullptr;
    }
    auto store = std::unique_ptr<StrataStore>(new StrataStore(f.sync, spec.fs));
    store->engine_ = std::move(e.value());
    auto group = [&](const char* name) {
      strata::LocalityGroupOptions g;
      g.name = name;
      g.compression = spec.zstd ? strata::Compression::kZstd : strata::Compression::kNone;
      g.compression_level = 3;
      g.block_size = 16 << 10;
      g.bloom_bits_per_key = 10;
      return g;
    };
    strata::TableSchema schema;
    if (spec.layout == Layout::kOneFamily) {
      schema.locality_groups.push_back(group("default"));
      schema.families.push_back({.name = "f", .locality_group = "default"});
    } else {
      schema.locality_groups.push_back(group("big"));
      schema.locality_groups.push_back(group("small"));
      schema.families.push_back({.name = "big", .locality_group = "big"});
      schema.families.push_back({.name = "small", .locality_group = "small"});
    }
    strata::Status s = store->engine_->CreateTenant("bench");
    if (s.IsAlreadyExists()) s = strata::Status::OK();
    if (s.ok()) {
      auto tenant = store->engine_->OpenTenant("bench");
      s = tenant.ok() ? tenant->CreateTable("t", schema) : tenant.status();
      if (s.IsAlreadyExists()) s = strata::Status::OK();
      if (s.ok()) {
        auto table = tenant->OpenTable("t");
        if (table.ok()) {
          store->table_ = *table;
        } else {
          s = table.status();
        }
      }
    }
    if (!s.ok()) {
      *error = "creating the table: " + s.ToString();
      return nullptr;
    }
    return store;
  }

  std::string Put(std::string_view key, std::string_view value) override {
    strata::RowMutation m;
    m.Put("f", "q", 1, value);
    strata::Status s = table_.Mutate(write_options_, key, m);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string Get(std::string_view key, size_t value_size, bool* found) override {
    auto cells = table_.ReadRow(read_options_, key);
    if (!cells.ok()) return cells.status().ToString();
    *found = !cells->empty();
    if (*found && (*cells)[0].value.size() != value_size) {
      return "row " + std::string(key) + " has a value of " +
             std::to_string((*cells)[0].value.size()) + " bytes";
    }
    return std::string();
  }

  std::string PutRow(std::string_view key, std::string_view big, std::string_view small) override {
    strata::RowMutation m;
    m.Put("big", "q", 1, big).Put("small", "q", 1, small);
    strata::Status s = table_.Mutate(write_options_, key, m);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string NewCursor(Family family, std::string_view start,
                        std::unique_ptr<Cursor>* cursor) override {
    strata::ScanSpec spec;
    spec.start_row = start;
    std::string name = "f";  // the only family: no filter, as a whole-row reader asks
    if (family != Family::kMain) {
      name = family == Family::kBig ? "big" : "small";
      spec.filter.families = {name};
    }
    auto it = table_.Scan(read_options_, spec);
    if (!it.ok()) return "Table::Scan: " + it.status().ToString();
    *cursor = std::make_unique<StrataCursor>(std::move(it.value()), std::move(name));
    return std::string();
  }

  std::string Settle() override {
    strata::Status s = engine_->Compact();
    return s.ok() ? std::string() : "Engine::Compact: " + s.ToString();
  }

  StoreStats Stats() override {
    const strata::EngineStats s = engine_->GetStats();
    StoreStats out;
    out.log_bytes = s.wal_bytes;
    out.flush_bytes = s.flush_bytes_written;
    out.compaction_bytes = s.compaction_bytes_written;
    out.table_bytes = s.table_bytes;
    out.table_files = s.table_files;
    out.level_files = LevelString(s.level_files);
    return out;
  }

  void ResetReadIo() override {
    if (fs_ != nullptr) fs_->Reset();
  }
  ReadIo GetReadIo() override { return fs_ != nullptr ? fs_->Get() : ReadIo(); }

  std::string Close() override {
    table_ = strata::Table();
    strata::Status s = engine_->Close();
    engine_.reset();
    return s.ok() ? std::string() : "Engine::Close: " + s.ToString();
  }

 private:
  StrataStore(bool sync, CountingFileSystem* fs) : fs_(fs) { write_options_.sync = sync; }

  CountingFileSystem* const fs_;  // null when the engine's reads are not counted
  std::unique_ptr<strata::Engine> engine_;
  strata::Table table_;
  strata::WriteOptions write_options_;
  strata::ReadOptions read_options_;
};

#ifdef STRATA_HAVE_ROCKSDB
class RocksCursor final : public Cursor {
 public:
  RocksCursor(std::unique_ptr<rocksdb::Iterator> it, std::string_view start) : it_(std::move(it)) {
    if (start.empty()) {
      it_->SeekToFirst();
    } else {
      it_->Seek(rocksdb::Slice(start.data(), start.size()));
    }
  }

  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  void Seek(std::string_view key) override { it_->Seek(rocksdb::Slice(key.data(), key.size())); }
  std::string_view key() const override {
    const rocksdb::Slice k = it_->key();
    return std::string_view(k.data(), k.size());
  }
  std::string_view value() const override {
    const rocksdb::Slice v = it_->value();
    return std::string_view(v.data(), v.size());
  }
  std::string error() const override {
    const rocksdb::Status s = it_->status();
    return s.ok() ? std::string() : "rocksdb::Iterator: " + s.ToString();
  }

 private:
  const std::unique_ptr<rocksdb::Iterator> it_;
};

class RocksStore final : public Store {
 public:
  // With Layout::kTwoGroups the database has column families "big" and
  // "small" (created when missing) beside the unused default one.
  static std::unique_ptr<Store> Open(const Flags& f, const StoreSpec& spec, std::string* error) {
    auto store = std::unique_ptr<RocksStore>(new RocksStore);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.compression = spec.zstd ? rocksdb::kZSTD : rocksdb::kNoCompression;
    o.compression_opts.level = 3;
    // Strata's level shape (EngineOptions defaults).
    o.level0_file_num_compaction_trigger = 4;
    o.max_bytes_for_level_base = 64ull << 20;
    o.max_bytes_for_level_multiplier = 10;
    o.target_file_size_base = 32ull << 20;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(f.cache_mb << 20);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.block_size = 16 << 10;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    store->stats_ = rocksdb::CreateDBStatistics();
    o.statistics = store->stats_;
    // Every column family shares the table factory, so the block cache too.
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)}};
    if (spec.layout == Layout::kTwoGroups) {
      families.push_back({"big", rocksdb::ColumnFamilyOptions(o)});
      families.push_back({"small", rocksdb::ColumnFamilyOptions(o)});
    }
    rocksdb::DB* db = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(o), spec.dir, families, &handles, &db);
    if (!s.ok()) {
      *error = "rocksdb::DB::Open: " + s.ToString();
      return nullptr;
    }
    store->db_.reset(db);
    store->handles_ = std::move(handles);
    store->write_options_.sync = f.sync;
    store->write_options_.disableWAL = false;
    return store;
  }

  ~RocksStore() override {
    if (db_) (void)Close();
  }

  std::string Put(std::string_view key, std::string_view value) override {
    rocksdb::Status s = db_->Put(write_options_, handles_[0], ToSlice(key), ToSlice(value));
    return s.ok() ? std::string() : s.ToString();
  }

  std::string Get(std::string_view key, size_t value_size, bool* found) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db_->Get(read_options_, handles_[0], ToSlice(key), &value);
    if (s.IsNotFound()) {
      *found = false;
      return std::string();
    }
    if (!s.ok()) return s.ToString();
    *found = true;
    if (value.size() != value_size) {
      return "key " + std::string(key) + " has a value of " + std::to_string(value.size()) +
             " bytes";
    }
    return std::string();
  }

  std::string PutRow(std::string_view key, std::string_view big, std::string_view small) override {
    rocksdb::WriteBatch batch;
    rocksdb::Status s = batch.Put(Handle(Family::kBig), ToSlice(key), ToSlice(big));
    if (s.ok()) s = batch.Put(Handle(Family::kSmall), ToSlice(key), ToSlice(small));
    if (s.ok()) s = db_->Write(write_options_, &batch);
    return s.ok() ? std::string() : s.ToString();
  }

  std::string NewCursor(Family family, std::string_view start,
                        std::unique_ptr<Cursor>* cursor) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options_, Handle(family)));
    *cursor = std::make_unique<RocksCursor>(std::move(it), start);
    return std::string();
  }

  std::string Settle() override {
    rocksdb::CompactRangeOptions cro;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      rocksdb::Status s = db_->CompactRange(cro, h, nullptr, nullptr);
      if (!s.ok()) return "CompactRange of " + h->GetName() + ": " + s.ToString();
    }
    return std::string();
  }

  StoreStats Stats() override {
    StoreStats out;
    out.log_bytes = stats_->getTickerCount(rocksdb::WAL_FILE_BYTES);
    out.flush_bytes = stats_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
    out.compaction_bytes = stats_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
    std::vector<uint64_t> files;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      uint64_t live = 0;
      if (db_->GetIntProperty(h, rocksdb::DB::Properties::kLiveSstFilesSize, &live)) {
        out.table_bytes += live;
      }
      files.resize(std::max<size_t>(files.size(), db_->NumberLevels(h)));
      for (int l = 0; l < db_->NumberLevels(h); l++) {
        std::string v;
        db_->GetProperty(h, rocksdb::DB::Properties::kNumFilesAtLevelPrefix + std::to_string(l),
                         &v);
        files[l] += std::strtoull(v.c_str(), nullptr, 10);
      }
    }
    for (uint64_t n : files) out.table_files += n;
    out.level_files = LevelString(files);
    return out;
  }

  void ResetReadIo() override {
    read_bytes_base_ = rocksdb::get_iostats_context()->bytes_read;
    opens_base_ = stats_->getTickerCount(rocksdb::NO_FILE_OPENS);
  }
  ReadIo GetReadIo() override {
    ReadIo io;
    io.known = true;
    io.bytes = rocksdb::get_iostats_context()->bytes_read - read_bytes_base_;
    io.opens = stats_->getTickerCount(rocksdb::NO_FILE_OPENS) - opens_base_;
    return io;
  }

  std::string Close() override {
    std::string error;
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      rocksdb::Status s = db_->DestroyColumnFamilyHandle(h);
      if (!s.ok() && error.empty()) error = "DestroyColumnFamilyHandle: " + s.ToString();
    }
    handles_.clear();
    rocksdb::Status s = db_->Close();
    db_.reset();
    if (!s.ok() && error.empty()) error = "rocksdb::DB::Close: " + s.ToString();
    return error;
  }

 private:
  RocksStore() = default;

  static rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

  // handles_ is {default} or {default, big, small}, as Open asked for them.
  rocksdb::ColumnFamilyHandle* Handle(Family family) const {
    switch (family) {
      case Family::kBig:
        return handles_.at(1);
      case Family::kSmall:
        return handles_.at(2);
      case Family::kMain:
        break;
    }
    return handles_[0];
  }

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  rocksdb::WriteOptions write_options_;
  rocksdb::ReadOptions read_options_;
  uint64_t read_bytes_base_ = 0;
  uint64_t opens_base_ = 0;
};
#endif  // STRATA_HAVE_ROCKSDB

// ---- Running one phase ------------------------------------------------------------

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

// What one thread's operations counted.
struct OpCounts {
  uint64_t found = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

// Runs `ops` operations split over the threads; thread t does operations
// [begin, end) of the phase, calling `op(t, j, &scratch, &counts)` for the
// j-th, which returns an error or an empty string. The first error ends the
// program. Times each call and prints progress to stderr every 10%.
template <typename Op>
PhaseResult RunOps(const Flags& f, const std::string& label, uint64_t ops, Op op) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::vector<strata::Histogram> hists(f.threads);
  std::vector<OpCounts> counts(f.threads);
  std::vector<std::string> errors(f.threads);
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < f.threads; t++) {
    workers.emplace_back([&, t] {
      const uint64_t begin = ops * t / f.threads;
      const uint64_t end = ops * (t + 1) / f.threads;
      std::string scratch;
      uint64_t pending = 0;
      for (uint64_t j = begin; j < end; j++) {
        const auto t0 = Clock::now();
        std::string err = op(t, j, &scratch, &counts[t]);
        const auto t1 = Clock::now();
        hists[t].Add(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (!err.empty()) {
          errors[t] = std::move(err);
          failed.store(true);
          break;
        }
        if (++pending == 256) {
          // Relaxed: only the progress line reads it, and join orders the rest.
          done.fetch_add(pending, std::memory_order_relaxed);
          pending = 0;
          if (failed.load(std::memory_order_relaxed)) break;
        }
      }
      done.fetch_add(pending, std::memory_order_relaxed);
    });
  }
  std::atomic<bool> finished{false};
  std::thread progress([&] {
    uint64_t next_tenth = 1;
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const uint64_t d = done.load(std::memory_order_relaxed);
      if (next_tenth < 10 && d * 10 >= next_tenth * ops) {
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        std::fprintf(stderr, "  %-32s %3" PRIu64 "%%  %10" PRIu64 " ops  %7.1f s\n",
                     label.c_str(), d * 100 / ops, d, secs);
        while (next_tenth < 10 && d * 10 >= next_tenth * ops) next_tenth++;
      }
    }
  });
  for (auto& w : workers) w.join();
  PhaseResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  finished.store(true);
  progress.join();
  for (int t = 0; t < f.threads; t++) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "db_bench: %s failed: %s\n", label.c_str(), errors[t].c_str());
      std::exit(1);
    }
    r.latency_us.Merge(hists[t]);
    r.found += counts[t].found;
    r.rows += counts[t].rows;
    r.bytes += counts[t].bytes;
  }
  r.ran = true;
  r.ops = ops;
  return r;
}

enum class Op { kWrite, kRead };

// Point writes or reads through RunOps; `key_of(thread, j)` names the key
// index and whether it is a missing key for the j-th operation of `thread`.
template <typename KeyOf>
PhaseResult RunPhase(const Flags& f, const std::string& label, Store* store, Op op, uint64_t ops,
                     const ValueSource& values, KeyOf key_of) {
  return RunOps(f, label, ops, [&](int t, uint64_t j, std::string* key, OpCounts* c) {
    const auto [index, missing] = key_of(t, j);
    MakeKey(f, index, missing, key);
    if (op == Op::kWrite) {
      c->bytes += f.key_size + f.value_size;
      return store->Put(*key, values.Get(j * 7919 + index));
    }
    bool hit = false;
    std::string err = store->Get(*key, f.value_size, &hit);
    if (hit) {
      c->found++;
      c->rows++;
      c->bytes += f.key_size + f.value_size;
    }
    return err;
  });
}

// One seekrandom operation: a new cursor at random existing key `index`, then
// kSeekNexts Next() calls, checking that the rows are the keys from `index`
// on, in order, with values of the right size. With `reused` (seekreuse),
// *reused is sought again instead (made by the first call).
std::string SeekAndNext(const Flags& f, Store* store, uint64_t index, std::string* key, OpCounts* c,
                        std::unique_ptr<Cursor>* reused = nullptr) {
  MakeKey(f, index, false, key);
  std::unique_ptr<Cursor> own;
  std::unique_ptr<Cursor>& cursor = reused != nullptr ? *reused : own;
  std::string err;
  if (reused == nullptr) {
    err = store->NewCursor(Family::kMain, *key, &cursor);
  } else {
    // Over every key (a scan's range bounds its seeks), then sought.
    if (cursor == nullptr) err = store->NewCursor(Family::kMain, std::string_view(), &cursor);
    if (err.empty()) cursor->Seek(*key);
  }
  if (!err.empty()) return err;
  const uint64_t want = std::min<uint64_t>(kSeekNexts + 1, f.num - index);
  uint64_t n = 0;
  while (cursor->Valid()) {
    if (cursor->key() != *key || cursor->value().size() != f.value_size) {
      return "seek to key " + std::to_string(index) + ": row " + std::to_string(n) +
             " after it is key '" + std::string(cursor->key()) + "' with a value of " +
             std::to_string(cursor->value().size()) + " bytes; expected key '" + *key + "' with " +
             std::to_string(f.value_size);
    }
    c->bytes += cursor->key().size() + cursor->value().size();
    if (++n == want) break;
    NextKey(f, key);
    cursor->Next();
  }
  err = cursor->error();
  if (!err.empty()) return err;
  if (n != want) {
    return "seek to key " + std::to_string(index) + " read " + std::to_string(n) +
           " rows; expected " + std::to_string(want);
  }
  c->found++;
  c->rows += n;
  return std::string();
}

// Scans all of `family` from its first row and checks it holds exactly keys
// 0 .. num-1, in order, where `value_ok(i, value)` accepts key i's value
// (called for i = 0, 1, ... in order).
template <typename ValueOk>
std::string ScanAll(const Flags& f, Store* store, Family family, ValueOk value_ok, OpCounts* c) {
  std::unique_ptr<Cursor> cursor;
  std::string err = store->NewCursor(family, std::string_view(), &cursor);
  if (!err.empty()) return err;
  std::string expected;
  MakeKey(f, 0, false, &expected);
  uint64_t i = 0;
  for (; cursor->Valid(); cursor->Next(), i++) {
    const std::string_view key = cursor->key();
    const std::string_view value = cursor->value();
    if (i >= f.num || key != expected || !value_ok(i, value)) {
      return "scan: row " + std::to_string(i) + " is key '" + std::string(key) +
             "' with a value of " + std::to_string(value.size()) + " bytes ('" +
             std::string(value.substr(0, 16)) + "'...); expected key '" +
             (i < f.num ? expected : "(none: past the last key)") + "' and its value";
    }
    c->bytes += key.size() + value.size();
    NextKey(f, &expected);
  }
  err = cursor->error();
  if (!err.empty()) return err;
  if (i != f.num) {
    return "scan ended after " + std::to_string(i) + " rows; expected " + std::to_string(f.num);
  }
  c->rows += i;
  c->found += i;
  return std::string();
}

// `threads` full scans at once (ScanAll), timed together; ops = rows read.
// The first error ends the program.
template <typename ValueOk>
PhaseResult RunScans(const Flags& f, const std::string& label, Store* store, Family family,
                     int threads, ValueOk value_ok) {
  std::vector<OpCounts> counts(threads);
  std::vector<std::string> errors(threads);
  const auto start = Clock::now();
  if (threads == 1) {
    errors[0] = ScanAll(f, store, family, value_ok, &counts[0]);
  } else {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; t++) {
      workers.emplace_back([&, t] { errors[t] = ScanAll(f, store, family, value_ok, &counts[t]); });
    }
    for (auto& w : workers) w.join();
  }
  PhaseResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (int t = 0; t < threads; t++) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "db_bench: %s failed: %s\n", label.c_str(), errors[t].c_str());
      std::exit(1);
    }
    r.found += counts[t].found;
    r.rows += counts[t].rows;
    r.bytes += counts[t].bytes;
  }
  r.ran = true;
  r.ops = r.rows;
  return r;
}

// ---- Results of one engine over the workload list ----------------------------------

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

void Check(const std::string& err) {
  if (!err.empty()) {
    std::fprintf(stderr, "db_bench: %s\n", err.c_str());
    std::exit(1);
  }
}

// scansmall's database at `spec.dir`: writes both families of every row in
// key order (untimed), settles and closes it.
void LoadGroups(const Flags& f, const std::string& label, OpenFn open, const StoreSpec& spec,
                const ValueSource& values, GroupScanResult* out) {
  std::filesystem::remove_all(spec.dir);
  std::string err;
  std::unique_ptr<Store> store = open(f, spec, &err);
  Check(err);
  (void)RunOps(f, label + " (load)", f.num, [&](int, uint64_t i, std::string* key, OpCounts*) {
    std::string small;
    MakeKey(f, i, false, key);
    MakeSmallValue(i, &small);
    return store->PutRow(*key, values.Get(BigValuePos(i)), small);
  });
  std::fprintf(stderr, "  %s: settling\n", label.c_str());
  Check(store->Settle());
  out->settled = store->Stats();
  Check(store->Close());
}

// One pass of scansmall over the database LoadGroups wrote: opens it (a cold
// block cache), times one scan of the small family and one of the big family,
// each checked value by value, and closes it. Returns the small scan.
PhaseResult ScanGroupsOnce(const Flags& f, const std::string& label, OpenFn open,
                           const StoreSpec& spec, const ValueSource& values, GroupPass* out) {
  std::string err;
  std::unique_ptr<Store> store = open(f, spec, &err);
  Check(err);
  std::string expected_small;
  MakeSmallValue(0, &expected_small);
  store->ResetReadIo();
  out->small = RunScans(f, label, store.get(), Family::kSmall, /*threads=*/1,
                        [&](uint64_t, std::string_view value) {
                          const bool ok = value == expected_small;
                          IncrementDigits(&expected_small, kSmallValueSize);
                          return ok;
                        });
  out->small_io = store->GetReadIo();
  store->ResetReadIo();
  out->big = RunScans(
      f, label + " (big family)", store.get(), Family::kBig, /*threads=*/1,
      [&](uint64_t i, std::string_view value) { return value == values.Get(BigValuePos(i)); });
  out->big_io = store->GetReadIo();
  Check(store->Close());
  return out->small;
}

bool IsReadWorkload(const std::string& bench) {
  return bench == "readrandom" || bench == "readmissing" || bench == "readseq" ||
         bench == "seekrandom" || bench == "seekreuse";
}

// One engine's side of a run: its database and what each workload measured.
// Write workloads and scansmall run on one engine, then on the other; the read
// workloads run in passes that alternate between the engines (see main).
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
  void RunSequential(size_t i) {
    const std::string& bench = f_.benchmarks[i];
    const std::string label = Label(bench);
    PhaseResult r;
    if (bench == "fillseq") {
      Fresh();
      r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                   [](int, uint64_t j) { return std::pair(j, false); });
      user_bytes_ += f_.num * entry_bytes_;
      dirty_ = true;
    } else if (bench == "fillrandom") {
      r = FillRandom(label);
    } else if (bench == "overwrite") {
      if (!store_) {
        std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                     label.c_str());
        (void)FillRandom(label + " (load)");
      }
      std::vector<strata::Random> rnds;
      for (int t = 0; t < f_.threads; t++) rnds.emplace_back(f_.seed * 1000 + 17 + t);
      r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                   [&](int t, uint64_t) { return std::pair(rnds[t].Uniform(f_.num), false); });
      user_bytes_ += f_.num * entry_bytes_;
      dirty_ = true;
      run_.amp.ran = true;
      run_.amp.after_overwrite = store_->Stats();
      run_.amp.user_bytes = user_bytes_;
      run_.amp.logical_bytes = f_.num * entry_bytes_;
      run_.amp.settled = false;
    } else {
      Check("db_bench: " + bench + " is not a write workload");
    }
    Done(label, r);
    run_.phases[i] = std::move(r);
  }

  // scansmall (workload `i`): writes and settles its database, which stays
  // on disk, closed, for the passes.
  void LoadGroupScan(size_t i) {
    groups_fs_ = std::make_unique<CountingFileSystem>();
    LoadGroups(f_, Label(f_.benchmarks[i]), open_, GroupSpec(), values_, &run_.group);
    group_passes_.clear();
  }

  // One pass of scansmall; LoadGroupScan must have run.
  void RunGroupScanPass(size_t i, int pass) {
    std::string label = Label(f_.benchmarks[i]);
    if (f_.passes > 1) label += " pass " + std::to_string(pass + 1);
    GroupPass p;
    ScanGroupsOnce(f_, label, open_, GroupSpec(), values_, &p);
    Done(label, p.small);
    run_.passes[i].push_back(p.small);
    group_passes_.push_back(std::move(p));
  }

  // After the last pass of scansmall: the median pass (by the small scan's
  // rows/s) is its result; removes its database.
  void FinishGroupScan(size_t i) {
    const size_t median = MedianPass(run_.passes[i]);
    if (median < group_passes_.size()) {
      const GroupPass& p = group_passes_[median];
      run_.phases[i] = p.small;
      run_.group.small_io = p.small_io;
      run_.group.big = p.big;
      run_.group.big_io = p.big_io;
      run_.group.ran = true;
    }
    std::filesystem::remove_all(GroupSpec().dir);
  }

  // Makes sure there is a database with every key, settled since its last
  // write; `bench` names the read workload that needs it.
  void ReadyForReads(const std::string& bench) {
    const std::string label = Label(bench);
    if (!store_) {
      std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                   label.c_str());
      (void)FillRandom(label + " (load)");
    }
    if (!dirty_) return;
    std::fprintf(stderr, "  %s: settling before reads\n", label.c_str());
    const auto t0 = Clock::now();
    Check(store_->Settle());
    run_.settle_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const StoreStats s = store_->Stats();
    run_.settle_shape = s.level_files;
    if (run_.amp.ran && !run_.amp.settled) {
      run_.amp.after_settle = s;
      run_.amp.settled = true;
    }
    dirty_ = false;
  }

  // One pass of read workload `i`; ReadyForReads must have run.
  void RunReadPass(size_t i, int pass) {
    const std::string& bench = f_.benchmarks[i];
    std::string label = Label(bench);
    if (f_.passes > 1) label += " pass " + std::to_string(pass + 1);
    PhaseResult r;
    if (bench == "readseq") {
      r = RunScans(f_, label, store_.get(), Family::kMain, f_.threads,
                   [&](uint64_t, std::string_view value) { return value.size() == f_.value_size; });
    } else if (bench == "seekrandom" || bench == "seekreuse") {
      // Every pass seeks to the same keys.
      std::vector<strata::Random> rnds;
      for (int t = 0; t < f_.threads; t++) rnds.emplace_back(f_.seed * 3000 + t);
      std::vector<std::unique_ptr<Cursor>> cursors(f_.threads);
      const bool reuse = bench == "seekreuse";
      r = RunOps(f_, label, reads_, [&](int t, uint64_t, std::string* key, OpCounts* c) {
        return SeekAndNext(f_, store_.get(), rnds[t].Uniform(f_.num), key, c,
                           reuse ? &cursors[t] : nullptr);
      });
    } else {  // readrandom, readmissing
      const bool missing = bench == "readmissing";
      std::vector<strata::Random> rnds;
      for (int t = 0; t < f_.threads; t++) {
        rnds.emplace_back(f_.seed * 2000 + (missing ? 500 : 0) + t);
      }
      r = RunPhase(f_, label, store_.get(), Op::kRead, reads_, values_,
                   [&](int t, uint64_t) { return std::pair(rnds[t].Uniform(f_.num), missing); });
    }
    Done(label, r);
    run_.passes[i].push_back(std::move(r));
  }

  // After the last pass of read workload `i`: its result is the median pass
  // by ops/s (the lower of the two middle ones for an even count).
  void FinishReads(size_t i) {
    const size_t median = MedianPass(run_.passes[i]);
    if (median < run_.passes[i].size()) run_.phases[i] = run_.passes[i][median];
  }

  // Closes the database and removes its files.
  void Close() {
    if (store_) Check(store_->Close());
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

 private:
  // The index of the median pass by ops/s (the lower of the two middle ones
  // for an even count); passes.size() when there is none.
  static size_t MedianPass(const std::vector<PhaseResult>& passes) {
    if (passes.empty()) return 0;
    std::vector<size_t> order(passes.size());
    for (size_t k = 0; k < order.size(); k++) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return passes[a].OpsPerSec() < passes[b].OpsPerSec(); });
    return order[(order.size() - 1) / 2];
  }

  StoreSpec GroupSpec() const {
    StoreSpec spec;
    spec.dir = dir_ + "-groups";
    spec.zstd = zstd_;
    spec.layout = Layout::kTwoGroups;
    spec.fs = groups_fs_.get();
    return spec;
  }

  std::string Label(const std::string& bench) const {
    return std::string(engine_name_) + " " + compression_ + " " + bench;
  }

  static void Done(const std::string& label, const PhaseResult& r) {
    std::fprintf(stderr, "  %-32s done: %.0f ops/s in %.1f s\n", label.c_str(), r.OpsPerSec(),
                 r.seconds);
  }

  void Fresh() {
    Close();
    std::string err;
    StoreSpec spec;
    spec.dir = dir_;
    spec.zstd = zstd_;
    store_ = open_(f_, spec, &err);
    Check(err);
    user_bytes_ = 0;
  }

  // fillrandom: every key once, in an order shuffled by --seed.
  PhaseResult FillRandom(const std::string& label) {
    Fresh();
    std::vector<uint64_t> order(f_.num);
    for (uint64_t i = 0; i < f_.num; i++) order[i] = i;
    strata::Random rnd(f_.seed);
    for (uint64_t i = f_.num - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);
    PhaseResult r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                             [&](int, uint64_t j) { return std::pair(order[j], false); });
    user_bytes_ += f_.num * entry_bytes_;
    dirty_ = true;
    return r;
  }

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
void RunCompression(const Flags& f, std::vector<std::unique_ptr<EngineDriver>>& engines) {
  const size_t n = f.benchmarks.size();
  // Runs pass `pass` of `run` on every engine, which go back to back, the
  // first one alternating from pass to pass.
  auto each_engine = [&](int pass, const std::function<void(EngineDriver&)>& run) {
    for (size_t x = 0; x < engines.size(); x++) {
      run(*engines[pass % 2 == 0 ? x : engines.size() - 1 - x]);
    }
  };
  for (size_t i = 0; i < n;) {
    if (f.benchmarks[i] == "scansmall") {
      for (auto& e : engines) e->LoadGroupScan(i);
      for (int pass = 0; pass < f.passes; pass++) {
        each_engine(pass, [&](EngineDriver& e) { e.RunGroupScanPass(i, pass); });
      }
      for (auto& e : engines) e->FinishGroupScan(i);
      i++;
      continue;
    }
    auto kind = [&](size_t k) {
      return f.benchmarks[k] == "scansmall" ? 2 : IsReadWorkload(f.benchmarks[k]) ? 1 : 0;
    };
    const bool reads = kind(i) == 1;
    size_t j = i;
    while (j < n && kind(j) == kind(i)) j++;
    if (!reads) {
      for (auto& e : engines) {
        for (size_t k = i; k < j; k++) e->RunSequential(k);
        size_t next_read = j;
        while (next_read < n && kind(next_read) != 1) next_read++;
        if (next_read < n) {
          e->ReadyForReads(f.benchmarks[next_read]);
        } else {
          e->Close();
        }
      }
    } else {
      for (auto& e : engines) e->ReadyForReads(f.benchmarks[i]);
      for (int pass = 0; pass < f.passes; pass++) {
        for (size_t k = i; k < j; k++) {
          each_engine(pass, [&](EngineDriver& e) { e.RunReadPass(k, pass); });
        }
      }
      for (auto& e : engines) {
        for (size_t k = i; k < j; k++) e->FinishReads(k);
      }
    }
    i = j;
  }
  for (auto& e : engines) e->Close();
}

// ---- Printing -----------------------------------------------------------------------

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Ratio(double a, double b) { return b > 0 ? Fmt("%.2fx", a / b) : "n/a"; }

std::string MB(uint64_t bytes) { return Fmt("%.2f", bytes / 1048576.0); }

// Joins file names: "000012.sst 000013.sst" (or "none").
std::string FileList(const std::set<std::string>& files) {
  std::string s;
  for (const std::string& name : files) s += (s.empty() ? "" : " ") + name;
  return s.empty() ? "none" : s;
}

// The scansmall details: both scans, and what each read from table files.
void PrintGroupScan(const Flags& f, const EngineRun& s, const EngineRun* r) {
  const GroupScanResult& A = s.group;
  const GroupScanResult* B = r && r->group.ran ? &r->group : nullptr;
  size_t small_index = 0;  // the last scansmall run, the one `group` describes
  for (size_t i = 0; i < f.benchmarks.size(); i++) {
    if (f.benchmarks[i] == "scansmall") small_index = i;
  }
  const PhaseResult& as = s.phases[small_index];
  const PhaseResult* bs = B ? &r->phases[small_index] : nullptr;
  std::printf(
      "\nscansmall: one table, locality group \"big\" (family big, %zu-byte values) and "
      "locality group \"small\" (family small, %zu-byte values), both on each of %" PRIu64
      " rows, written in key order and settled; then, in each pass, opened (cold block "
      "cache; the OS page cache stays warm), one scan (one thread) of family small alone, "
      "one of family big, closed. RocksDB: column families big and small, one iterator "
      "over each. The figures are those of the median pass by small-scan rows/s.\n",
      f.value_size, kSmallValueSize, f.num);
  std::printf("%-46s | %16s %16s %7s\n", "", "Strata", "RocksDB", "ratio");
  auto row = [&](const char* name, const std::string& a, const std::string& b,
                 const std::string& ratio) {
    std::printf("%-46s | %16s %16s %7s\n", name, a.c_str(), b.c_str(), ratio.c_str());
  };
  auto count = [](const ReadIo& io, uint64_t v) { return io.known ? std::to_string(v) : "n/a"; };
  auto bytes = [](const ReadIo& io) { return io.known ? MB(io.bytes) : "n/a"; };
  auto ratio_if = [&](bool known, double a, double b) { return known ? Ratio(a, b) : ""; };
  row("table MB on disk (both families)", MB(A.settled.table_bytes),
      B ? MB(B->settled.table_bytes) : "n/a",
      B ? Ratio(A.settled.table_bytes, B->settled.table_bytes) : "n/a");
  row("table files (both families)", std::to_string(A.settled.table_files),
      B ? std::to_string(B->settled.table_files) : "n/a", "");
  row("small-family scan rows/s", Fmt("%.0f", as.OpsPerSec()),
      bs ? Fmt("%.0f", bs->OpsPerSec()) : "n/a",
      bs ? Ratio(as.OpsPerSec(), bs->OpsPerSec()) : "n/a");
  row("  table MB read", bytes(A.small_io), B ? bytes(B->small_io) : "n/a",
      ratio_if(B && A.small_io.known && B->small_io.known, A.small_io.bytes,
               B ? B->small_io.bytes : 0));
  row("  table files opened", count(A.small_io, A.small_io.opens),
      B ? count(B->small_io, B->small_io.opens) : "n/a", "");
  row("big-family scan rows/s", Fmt("%.0f", A.big.OpsPerSec()),
      B ? Fmt("%.0f", B->big.OpsPerSec()) : "n/a",
      B ? Ratio(A.big.OpsPerSec(), B->big.OpsPerSec()) : "n/a");
  row("  table MB read", bytes(A.big_io), B ? bytes(B->big_io) : "n/a",
      ratio_if(B && A.big_io.known && B->big_io.known, A.big_io.bytes, B ? B->big_io.bytes : 0));
  row("  table files opened", count(A.big_io, A.big_io.opens),
      B ? count(B->big_io, B->big_io.opens) : "n/a", "");
  row("small scan time / big scan time",
      Fmt("%.2f", A.big.seconds > 0 ? as.seconds / A.big.seconds : 0),
      bs ? Fmt("%.2f", B->big.seconds > 0 ? bs->seconds / B->big.seconds : 0) : "n/a", "");
  if (A.small_io.per_file) {
    std::set<std::string> shared;
    std::set_intersection(A.small_io.files.begin(), A.small_io.files.end(), A.big_io.files.begin(),
                          A.big_io.files.end(), std::inserter(shared, shared.begin()));
    std::printf(
        "Strata table files read: by the small scan %zu (%s), by the big scan %zu (%s); "
        "by both: %zu%s; live: %" PRIu64 "\n",
        A.small_io.files.size(), FileList(A.small_io.files).c_str(), A.big_io.files.size(),
        FileList(A.big_io.files).c_str(), shared.size(),
        shared.empty() ? "" : (" (" + FileList(shared) + ")").c_str(), A.settled.table_files);
  }
  std::printf(
      "(Table MB read: Strata counts RandomAccessFile reads of *.sst through a counting "
      "FileSystem (EngineOptions::file_system); it opens table files on first use, so "
      "their index and filter blocks count too. RocksDB: the scanning thread's "
      "IOStatsContext bytes_read and the NO_FILE_OPENS ticker; it opens every table file "
      "at DB::Open (max_open_files=-1), so index and filter reads come before the scan.)\n");
}

// ---- Amplification figures (the table's and --json's) -------------------------------

// Table bytes written (flushes and compactions) since the database was created.
uint64_t WrittenBytes(const StoreStats& x) { return x.flush_bytes + x.compaction_bytes; }

// Write amplification at the end of overwrite: table bytes written per log byte.
double WriteAmpPerLogByte(const AmpResult& a) {
  const StoreStats& x = a.after_overwrite;
  return x.log_bytes ? static_cast<double>(WrittenBytes(x)) / x.log_bytes : 0.0;
}

// Write amplification at the end of overwrite: table bytes written per user
// (key + value) byte.
double WriteAmpPerUserByte(const AmpResult& a) {
  return a.user_bytes ? static_cast<double>(WrittenBytes(a.after_overwrite)) / a.user_bytes : 0.0;
}

// Space amplification in the state `x`: table bytes per live key + value byte.
double SpaceAmp(const AmpResult& a, const StoreStats& x) {
  return a.logical_bytes ? static_cast<double>(x.table_bytes) / a.logical_bytes : 0.0;
}

// Table bytes written through settling per user byte.
// REQUIRES: a.settled
double WriteAmpThroughSettling(const AmpResult& a) {
  return a.user_bytes ? static_cast<double>(WrittenBytes(a.after_settle)) / a.user_bytes : 0.0;
}

void PrintTable(const Flags& f, const std::string& compression, const EngineRun& s,
                const EngineRun* r) {
  std::printf("\ncompression=%s  (ratio = Strata / RocksDB; for ops/s and MB/s above 1 means "
              "Strata is faster, for latency below 1 does)\n",
              compression.c_str());
  std::printf("%-12s | %12s %12s %7s | %8s %8s | %17s %17s | %s\n", "workload", "Strata op/s",
              "RocksDB op/s", "ratio", "S MB/s", "R MB/s", "S p50/p99 us", "R p50/p99 us",
              "p50 ratio, p99 ratio; found");
  std::printf("%s\n", std::string(136, '-').c_str());
  for (size_t i = 0; i < f.benchmarks.size(); i++) {
    const std::string& name = f.benchmarks[i];
    const PhaseResult& a = s.phases[i];
    const PhaseResult* b = r ? &r->phases[i] : nullptr;
    auto lat = [](const PhaseResult& p) {
      if (p.latency_us.Count() == 0) return std::string("n/a");
      return Fmt("%.1f", p.latency_us.Percentile(50)) + " / " +
             Fmt("%.1f", p.latency_us.Percentile(99));
    };
    std::string extra;
    if (b && a.latency_us.Count() > 0 && b->latency_us.Count() > 0) {
      extra = Ratio(a.latency_us.Percentile(50), b->latency_us.Percentile(50)) + ", " +
              Ratio(a.latency_us.Percentile(99), b->latency_us.Percentile(99)) + "; ";
    }
    auto both = [&](uint64_t x, const std::optional<uint64_t>& y) {
      return std::to_string(x) + (y ? " / " + std::to_string(*y) : "");
    };
    auto of_b = [&](uint64_t PhaseResult::*field) {
      return b ? std::optional<uint64_t>((*b).*field) : std::nullopt;
    };
    if (name == "readrandom" || name == "readmissing") {
      extra += "found " + both(a.found, of_b(&PhaseResult::found)) + " of " + std::to_string(a.ops);
    } else if (name == "readseq" || name == "scansmall") {
      extra += "rows " + both(a.rows, of_b(&PhaseResult::rows)) + " of " +
               std::to_string(f.num * (name == "readseq" ? f.threads : 1));
    } else if (name == "seekrandom" || name == "seekreuse") {
      extra += "found " + both(a.found, of_b(&PhaseResult::found)) + " of " +
               std::to_string(a.ops) + ", rows " + both(a.rows, of_b(&PhaseResult::rows)) +
               " (Seek + " + std::to_string(kSeekNexts) + " Next)";
    } else if (!extra.empty()) {
      extra.resize(extra.size() - 2);
    }
    std::printf("%-12s | %12.0f %12s %7s | %8.1f %8s | %17s %17s | %s\n", name.c_str(),
                a.OpsPerSec(), b ? Fmt("%.0f", b->OpsPerSec()).c_str() : "n/a",
                b ? Ratio(a.OpsPerSec(), b->OpsPerSec()).c_str() : "n/a", a.MBPerSec(),
                b ? Fmt("%.1f", b->MBPerSec()).c_str() : "n/a", lat(a).c_str(),
                b ? lat(*b).c_str() : "n/a", extra.c_str());
  }
  std::printf("(op/s: rows/s for readseq and scansmall, seeks/s for seekrandom and seekreuse)\n");
  if (r != nullptr && f.passes > 1) {
    std::printf(
        "read passes, Strata / RocksDB op/s per pass (engines back to back; odd passes "
        "run Strata first, even passes RocksDB):\n");
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      if (s.passes[i].empty() || s.passes[i].size() != r->passes[i].size()) continue;
      std::string line;
      for (size_t p = 0; p < s.passes[i].size(); p++) {
        line += " " + Ratio(s.passes[i][p].OpsPerSec(), r->passes[i][p].OpsPerSec());
      }
      std::printf("  %-12s%s\n", f.benchmarks[i].c_str(), line.c_str());
    }
  }
  if (s.settle_seconds >= 0) {
    std::printf("settle before reads (Strata Engine::Compact, RocksDB CompactRange over all "
                "keys): Strata %.1f s -> %s; RocksDB %s -> %s\n",
                s.settle_seconds, s.settle_shape.c_str(),
                r ? Fmt("%.1f s", r->settle_seconds).c_str() : "n/a",
                r ? r->settle_shape.c_str() : "n/a");
  }
  if (s.group.ran) PrintGroupScan(f, s, r);
  if (!s.amp.ran) return;
  auto mb = [](uint64_t b) { return Fmt("%.1f", b / 1048576.0); };
  const AmpResult& A = s.amp;
  const AmpResult* B = r && r->amp.ran ? &r->amp : nullptr;
  std::printf("\namplification after fill + overwrite (counters since the database was created, "
              "read at the end of overwrite, before settling; data still in memtables not "
              "counted):\n");
  std::printf("%-46s | %16s %16s %7s\n", "", "Strata", "RocksDB", "ratio");
  auto row = [&](const char* name, const std::string& a, const std::string& b,
                 const std::string& ratio) {
    std::printf("%-46s | %16s %16s %7s\n", name, a.c_str(), b.c_str(), ratio.c_str());
  };
  const StoreStats& ao = A.after_overwrite;
  row("log MB written", mb(ao.log_bytes), B ? mb(B->after_overwrite.log_bytes) : "n/a",
      B ? Ratio(ao.log_bytes, B->after_overwrite.log_bytes) : "n/a");
  row("flush MB written", mb(ao.flush_bytes), B ? mb(B->after_overwrite.flush_bytes) : "n/a",
      B ? Ratio(ao.flush_bytes, B->after_overwrite.flush_bytes) : "n/a");
  row("compaction MB written", mb(ao.compaction_bytes),
      B ? mb(B->after_overwrite.compaction_bytes) : "n/a",
      B ? Ratio(ao.compaction_bytes, B->after_overwrite.compaction_bytes) : "n/a");
  row("user MB written (key+value)", mb(A.user_bytes), B ? mb(B->user_bytes) : "n/a", "");
  row("write amp (flush+compaction) / log bytes", Fmt("%.2f", WriteAmpPerLogByte(A)),
      B ? Fmt("%.2f", WriteAmpPerLogByte(*B)) : "n/a",
      B ? Ratio(WriteAmpPerLogByte(A), WriteAmpPerLogByte(*B)) : "n/a");
  row("write amp (flush+compaction) / user bytes", Fmt("%.2f", WriteAmpPerUserByte(A)),
      B ? Fmt("%.2f", WriteAmpPerUserByte(*B)) : "n/a",
      B ? Ratio(WriteAmpPerUserByte(A), WriteAmpPerUserByte(*B)) : "n/a");
  row("table MB on disk after overwrite", mb(ao.table_bytes),
      B ? mb(B->after_overwrite.table_bytes) : "n/a",
      B ? Ratio(ao.table_bytes, B->after_overwrite.table_bytes) : "n/a");
  row("space amp after overwrite (tables / live k+v)", Fmt("%.2f", SpaceAmp(A, ao)),
      B ? Fmt("%.2f", SpaceAmp(*B, B->after_overwrite)) : "n/a",
      B ? Ratio(SpaceAmp(A, ao), SpaceAmp(*B, B->after_overwrite)) : "n/a");
  row("files per level after overwrite", ao.level_files,
      B ? B->after_overwrite.level_files : "n/a", "");
  if (A.settled) {
    const bool b_settled = B && B->settled;
    row("space amp after settling", Fmt("%.2f", SpaceAmp(A, A.after_settle)),
        b_settled ? Fmt("%.2f", SpaceAmp(*B, B->after_settle)) : "n/a",
        b_settled ? Ratio(SpaceAmp(A, A.after_settle), SpaceAmp(*B, B->after_settle)) : "n/a");
    // Through settling every engine has flushed all and compacted to one
    // file per key: totals that do not depend on how far behind
    // compaction was when overwrite ended.
    const StoreStats& as = A.after_settle;
    row("flush+compaction MB written through settling", mb(WrittenBytes(as)),
        b_settled ? mb(WrittenBytes(B->after_settle)) : "n/a",
        b_settled ? Ratio(WrittenBytes(as), WrittenBytes(B->after_settle)) : "n/a");
    row("write amp through settling / user bytes", Fmt("%.2f", WriteAmpThroughSettling(A)),
        b_settled ? Fmt("%.2f", WriteAmpThroughSettling(*B)) : "n/a",
        b_settled ? Ratio(WriteAmpThroughSettling(A), WriteAmpThroughSettling(*B)) : "n/a");
  }
  std::printf("(RocksDB: log = WAL_FILE_BYTES, flush = FLUSH_WRITE_BYTES, compaction = "
              "COMPACT_WRITE_BYTES tickers, tables = rocksdb.live-sst-files-size; Strata: "
              "EngineStats wal_bytes, flush_bytes_written, compaction_bytes_written, "
              "table_bytes. Live k+v = num * (key_size + value_size) = %s MB.)\n",
              mb(A.logical_bytes).c_str());
}

// ---- The JSON document (--json) -----------------------------------------------------

// Writes one JSON document with two-space indentation. The caller opens and
// closes objects and arrays in order and names each member of an object with
// Key() before its value. Numbers take the shortest text that reads back to
// the same double; NaN and infinities become null. Thread-compatible.
class JsonWriter {
 public:
  JsonWriter() = default;
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& Key(std::string_view key) {
    Element();
    Quoted(key);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Number(double v) {
    if (!std::isfinite(v)) return Raw("null");
    char buf[64];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
    return Raw(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  JsonWriter& Uint(uint64_t v) { return Raw(std::to_string(v)); }
  JsonWriter& Bool(bool v) { return Raw(v ? "true" : "false"); }
  JsonWriter& Null() { return Raw("null"); }
  JsonWriter& String(std::string_view s) {
    Element();
    Quoted(s);
    return *this;
  }

  // The document so far.
  const std::string& text() const { return out_; }

 private:
  // Before a key, or a value that is not a member's: a comma after the
  // previous element and a new line at the container's depth.
  void Element() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (empty_.empty()) return;
    if (!empty_.back()) out_ += ',';
    empty_.back() = false;
    out_ += '\n';
    out_.append(2 * empty_.size(), ' ');
  }
  JsonWriter& Raw(std::string_view v) {
    Element();
    out_ += v;
    return *this;
  }
  JsonWriter& Open(char brace) {
    Element();
    out_ += brace;
    empty_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char brace) {
    const bool empty = empty_.back();
    empty_.pop_back();
    if (!empty) {
      out_ += '\n';
      out_.append(2 * empty_.size(), ' ');
    }
    out_ += brace;
    return *this;
  }
  void Quoted(std::string_view s) {
    out_ += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
        out_ += buf;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> empty_;  // per open container: no element written yet
  bool after_key_ = false;   // a Key() was written; its value comes next
};

double ToMB(uint64_t bytes) { return bytes / 1048576.0; }

// What a workload's ops are: rows for the scans, seeks for the seek workloads.
const char* UnitOf(const std::string& workload) {
  if (workload == "readseq" || workload == "scansmall") return "rows";
  if (workload == "seekrandom" || workload == "seekreuse") return "seeks";
  return "ops";
}

void JsonPhase(JsonWriter* j, const PhaseResult& p, const std::vector<PhaseResult>& passes) {
  j->BeginObject();
  j->Key("ops_per_sec").Number(p.OpsPerSec());
  j->Key("mb_per_sec").Number(p.MBPerSec());
  j->Key("seconds").Number(p.seconds);
  j->Key("ops").Uint(p.ops);
  j->Key("found").Uint(p.found);
  j->Key("rows").Uint(p.rows);
  j->Key("bytes").Uint(p.bytes);
  j->Key("latency_us");
  if (p.latency_us.Count() == 0) {
    j->Null();
  } else {
    j->BeginObject();
    j->Key("count").Uint(p.latency_us.Count());
    j->Key("p50").Number(p.latency_us.Percentile(50));
    j->Key("p99").Number(p.latency_us.Percentile(99));
    j->Key("p99_9").Number(p.latency_us.Percentile(99.9));
    j->Key("max").Number(p.latency_us.Max());
    j->EndObject();
  }
  j->Key("passes").BeginArray();
  for (const PhaseResult& pass : passes) {
    j->BeginObject();
    j->Key("ops_per_sec").Number(pass.OpsPerSec());
    j->Key("seconds").Number(pass.seconds);
    j->EndObject();
  }
  j->EndArray();
  j->EndObject();
}

void JsonSettle(JsonWriter* j, const EngineRun& e) {
  if (e.settle_seconds < 0) {
    j->Null();
    return;
  }
  j->BeginObject();
  j->Key("seconds").Number(e.settle_seconds);
  j->Key("levels").String(e.settle_shape);
  j->EndObject();
}

void JsonAmp(JsonWriter* j, const AmpResult& a) {
  if (!a.ran) {
    j->Null();
    return;
  }
  const StoreStats& o = a.after_overwrite;
  j->BeginObject();
  j->Key("log_mb").Number(ToMB(o.log_bytes));
  j->Key("flush_mb").Number(ToMB(o.flush_bytes));
  j->Key("compaction_mb").Number(ToMB(o.compaction_bytes));
  j->Key("user_mb").Number(ToMB(a.user_bytes));
  j->Key("write_amp_per_log_byte").Number(WriteAmpPerLogByte(a));
  j->Key("write_amp_per_user_byte").Number(WriteAmpPerUserByte(a));
  j->Key("table_mb_after_overwrite").Number(ToMB(o.table_bytes));
  j->Key("space_amp_after_overwrite").Number(SpaceAmp(a, o));
  j->Key("levels_after_overwrite").String(o.level_files);
  j->Key("settled").Bool(a.settled);
  if (a.settled) {
    j->Key("space_amp_after_settling").Number(SpaceAmp(a, a.after_settle));
    j->Key("written_mb_through_settling").Number(ToMB(WrittenBytes(a.after_settle)));
    j->Key("write_amp_through_settling").Number(WriteAmpThroughSettling(a));
  } else {
    j->Key("space_amp_after_settling").Null();
    j->Key("written_mb_through_settling").Null();
    j->Key("write_amp_through_settling").Null();
  }
  j->EndObject();
}

void JsonReadIo(JsonWriter* j, const char* prefix, const ReadIo& io) {
  const std::string p = prefix;
  if (!io.known) {
    j->Key(p + "table_mb_read").Null();
    j->Key(p + "files_opened").Null();
  } else {
    j->Key(p + "table_mb_read").Number(ToMB(io.bytes));
    j->Key(p + "files_opened").Uint(io.opens);
  }
  j->Key(p + "files_read");
  if (!io.per_file) {
    j->Null();
    return;
  }
  j->BeginArray();
  for (const std::string& name : io.files) j->String(name);
  j->EndArray();
}

// scansmall's figures of one engine; `small` is its timed scan of the small
// family (the median pass).
void JsonGroupScan(JsonWriter* j, const GroupScanResult& g, const PhaseResult& small) {
  if (!g.ran) {
    j->Null();
    return;
  }
  j->BeginObject();
  j->Key("table_mb").Number(ToMB(g.settled.table_bytes));
  j->Key("table_files").Uint(g.settled.table_files);
  j->Key("small_rows_per_sec").Number(small.OpsPerSec());
  JsonReadIo(j, "small_", g.small_io);
  j->Key("big_rows_per_sec").Number(g.big.OpsPerSec());
  JsonReadIo(j, "big_", g.big_io);
  j->Key("small_over_big_time").Number(g.big.seconds > 0 ? small.seconds / g.big.seconds : 0);
  j->EndObject();
}

// Both engines' value of one member: `write(engine)` for Strata and for
// RocksDB, null for an engine that did not run.
template <typename Write>
void JsonEngines(JsonWriter* j, const char* key, const EngineRun& s, const EngineRun* r,
                 Write write) {
  j->Key(key).BeginObject();
  j->Key("strata");
  write(s);
  j->Key("rocksdb");
  if (r != nullptr) {
    write(*r);
  } else {
    j->Null();
  }
  j->EndObject();
}

// The figures of one compression's run of every workload on each engine.
struct Report {
  std::string compression;
  EngineRun strata;
  std::optional<EngineRun> rocks;
};

// The whole --json document.
std::string JsonDocument(const Flags& f, const std::vector<Report>& reports, double total_seconds) {
  JsonWriter j;
  j.BeginObject();
  j.Key("program").String("db_bench");
  j.Key("format_version").Uint(1);
  j.Key("config").BeginObject();
  j.Key("num").Uint(f.num);
  j.Key("reads").Uint(f.reads.value_or(f.num));
  j.Key("threads").Uint(static_cast<uint64_t>(f.threads));
  j.Key("key_size").Uint(f.key_size);
  j.Key("value_size").Uint(f.value_size);
  j.Key("cache_mb").Uint(f.cache_mb);
  j.Key("write_buffer_mb").Uint(f.write_buffer_mb);
  j.Key("sync").Bool(f.sync);
  j.Key("passes").Uint(static_cast<uint64_t>(f.passes));
  j.Key("seed").Uint(f.seed);
  j.Key("compressions").BeginArray();
  for (const std::string& c : f.compressions) j.String(c);
  j.EndArray();
  j.Key("benchmarks").BeginArray();
  for (const std::string& b : f.benchmarks) j.String(b);
  j.EndArray();
  j.EndObject();
#ifdef STRATA_HAVE_ROCKSDB
  j.Key("rocksdb").Bool(true);
#else
  j.Key("rocksdb").Bool(false);
#endif
  j.Key("total_seconds").Number(total_seconds);
  j.Key("runs").BeginArray();
  for (const Report& rep : reports) {
    const EngineRun& s = rep.strata;
    const EngineRun* r = rep.rocks ? &*rep.rocks : nullptr;
    j.BeginObject();
    j.Key("compression").String(rep.compression);
    j.Key("workloads").BeginArray();
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      j.BeginObject();
      j.Key("name").String(f.benchmarks[i]);
      j.Key("unit").String(UnitOf(f.benchmarks[i]));
      j.Key("strata");
      JsonPhase(&j, s.phases[i], s.passes[i]);
      j.Key("rocksdb");
      if (r != nullptr) {
        JsonPhase(&j, r->phases[i], r->passes[i]);
      } else {
        j.Null();
      }
      j.EndObject();
    }
    j.EndArray();
    JsonEngines(&j, "settle", s, r, [&](const EngineRun& e) { JsonSettle(&j, e); });
    j.Key("live_mb").Number(ToMB(f.num * (f.key_size + f.value_size)));
    if (s.amp.ran) {
      JsonEngines(&j, "amplification", s, r, [&](const EngineRun& e) { JsonAmp(&j, e.amp); });
    } else {
      j.Key("amplification").Null();
    }
    size_t small_index = f.benchmarks.size();  // the last scansmall run, as PrintGroupScan
    for (size_t i = 0; i < f.benchmarks.size(); i++) {
      if (f.benchmarks[i] == "scansmall") small_index = i;
    }
    if (s.group.ran && small_index < f.benchmarks.size()) {
      JsonEngines(&j, "scansmall", s, r,
                  [&](const EngineRun& e) { JsonGroupScan(&j, e.group, e.phases[small_index]); });
    } else {
      j.Key("scansmall").Null();
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.text() + "\n";
}

}  // namespace

int main(int argc, char** argv) {
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
  std::printf("num=%" PRIu64 " reads=%" PRIu64 " threads=%d key_size=%zu value_size=%zu "
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
    engines.push_back(std::make_unique<EngineDriver>(f, "strata", &StrataStore::Open,
                                                     (root / ("strata-" + c)).string(), c));
#ifdef STRATA_HAVE_ROCKSDB
    engines.push_back(std::make_unique<EngineDriver>(f, "rocksdb", &RocksStore::Open,
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
