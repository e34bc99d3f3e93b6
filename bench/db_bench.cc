// db_bench: named whole-database workloads (fillseq, fillrandom, overwrite,
// readrandom, readmissing) run through Strata and, in the same run, through
// RocksDB with the same sizes and settings, printed side by side with the
// ratio Strata / RocksDB. After overwrite it reports write and space
// amplification of both.
//
//   build/bench/db_bench --num=200000              # a quick check
//   build/bench/db_bench --help                    # every flag
//
// Plain C++ rather than Google Benchmark: each workload is one long phase
// over a whole database, not a loop of identical small operations.
//
// Both engines get the same block cache size, memtable size, compression
// (none or zstd level 3), bloom filter bits (10 per key), block size
// (16 KiB), log on and the same sync choice. Strata stores each key as a row
// with one cell: family "f", qualifier "q", timestamp 1. Engines run one
// after the other (all workloads on Strata, then all on RocksDB), so one
// engine's background work never overlaps the other's timed phase.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/histogram.h"
#include "common/random.h"
#include "strata/engine.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// ---- Flags --------------------------------------------------------------------

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
  std::vector<std::string> benchmarks = {"fillseq", "fillrandom", "overwrite", "readrandom",
                                         "readmissing"};
  uint64_t seed = 301;
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
Before the first read phase after writes both engines settle the same way:
Strata with Engine::Compact(), RocksDB with CompactRange over every key.

Flags:
  --num N              keys in the database (default 1000000)
  --reads N            operations of each read workload (default: --num)
  --threads N          client threads per workload (default 1)
  --compression C      none | zstd (default: both, one after the other)
  --value_size N       bytes per value (default 100); values compress to about
                       half, as db_bench's --compression_ratio=0.5
  --key_size N         bytes per key (default 16): zero-padded decimal
  --cache_mb N         block cache of each engine in MiB (default 64)
  --write_buffer_mb N  memtable size of each engine in MiB (default 32)
  --sync[=0|1]         fdatasync the log on every write (default off)
  --db DIR             where the databases go (default: a new directory under
                       the system temp dir); what this program creates is
                       removed at the end
  --benchmarks LIST    comma list (default fillseq,fillrandom,overwrite,
                       readrandom,readmissing)
  --seed N             seed of the key orders and values (default 301)
  --help               this text

Same for both engines: block cache size, memtable size, compression (zstd at
level 3), bloom filter 10 bits per key, 16 KiB blocks, log on, --sync. Level
shape as Strata's defaults: compaction at 4 level-0 files, level 1 of 64 MiB,
x10 per level, 32 MiB output files. RocksDB keeps its default background jobs.

Reported per workload: ops/s; MB/s of key + value bytes (as db_bench: every
write, and the reads that found their key); p50/p99 latency of one call in
microseconds. Ratios are Strata / RocksDB. The figures depend on the machine, its disk and
whatever else runs on it: compare the two engines only within one run on one
machine, never figures from different runs.
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
        if (b != "fillseq" && b != "fillrandom" && b != "overwrite" && b != "readrandom" &&
            b != "readmissing") {
          Usage("unknown benchmark '" + b + "'");
        }
      }
      if (f.benchmarks.empty()) Usage("--benchmarks is empty");
    } else if (name == "seed") {
      f.seed = need_uint(0);
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
  std::string level_files;  // "L0:3 L1:5 ..."
};

class Store {
 public:
  virtual ~Store() = default;
  // Each returns an empty string on success, else the error.
  virtual std::string Put(std::string_view key, std::string_view value) = 0;
  virtual std::string Get(std::string_view key, size_t value_size, bool* found) = 0;
  // Flushes and compacts so reads start from the same shape on both engines.
  virtual std::string Settle() = 0;
  virtual StoreStats Stats() = 0;
  virtual std::string Close() = 0;
};

std::string LevelString(const std::vector<uint64_t>& files) {
  std::string s;
  for (size_t l = 0; l < files.size(); l++) {
    if (files[l] == 0) continue;
    if (!s.empty()) s += ' ';
    s += "L" + std::to_string(l) + ":" + std::to_string(files[l]);
  }
  return s.empty() ? "none" : s;
}

class StrataStore final : public Store {
 public:
  static std::unique_ptr<Store> Open(const Flags& f, const std::string& dir, bool zstd,
                                     std::string* error) {
    strata::EngineOptions o;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.block_cache_size = f.cache_mb << 20;
    auto e = strata::Engine::Open(dir, o);
    if (!e.ok()) {
      *error = "Engine::Open: " + e.status().ToString();
      return nullptr;
    }
    auto store = std::unique_ptr<StrataStore>(new StrataStore(f.sync));
    store->engine_ = std::move(e.value());
    strata::TableSchema schema;
    strata::LocalityGroupOptions g;
    g.name = "default";
    g.compression = zstd ? strata::Compression::kZstd : strata::Compression::kNone;
    g.compression_level = 3;
    g.block_size = 16 << 10;
    g.bloom_bits_per_key = 10;
    schema.locality_groups.push_back(g);
    schema.families.push_back({.name = "f", .locality_group = "default"});
    strata::Status s = store->engine_->CreateTenant("bench");
    if (s.ok()) {
      auto tenant = store->engine_->OpenTenant("bench");
      s = tenant.ok() ? tenant->CreateTable("t", schema) : tenant.status();
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
    out.level_files = LevelString(s.level_files);
    return out;
  }

  std::string Close() override {
    table_ = strata::Table();
    strata::Status s = engine_->Close();
    engine_.reset();
    return s.ok() ? std::string() : "Engine::Close: " + s.ToString();
  }

 private:
  explicit StrataStore(bool sync) { write_options_.sync = sync; }

  std::unique_ptr<strata::Engine> engine_;
  strata::Table table_;
  strata::WriteOptions write_options_;
  strata::ReadOptions read_options_;
};

#ifdef STRATA_HAVE_ROCKSDB
class RocksStore final : public Store {
 public:
  static std::unique_ptr<Store> Open(const Flags& f, const std::string& dir, bool zstd,
                                     std::string* error) {
    auto store = std::unique_ptr<RocksStore>(new RocksStore);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.write_buffer_size = f.write_buffer_mb << 20;
    o.compression = zstd ? rocksdb::kZSTD : rocksdb::kNoCompression;
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
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir, &db);
    if (!s.ok()) {
      *error = "rocksdb::DB::Open: " + s.ToString();
      return nullptr;
    }
    store->db_.reset(db);
    store->write_options_.sync = f.sync;
    store->write_options_.disableWAL = false;
    return store;
  }

  std::string Put(std::string_view key, std::string_view value) override {
    rocksdb::Status s = db_->Put(write_options_, rocksdb::Slice(key.data(), key.size()),
                                 rocksdb::Slice(value.data(), value.size()));
    return s.ok() ? std::string() : s.ToString();
  }

  std::string Get(std::string_view key, size_t value_size, bool* found) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db_->Get(read_options_, db_->DefaultColumnFamily(),
                                 rocksdb::Slice(key.data(), key.size()), &value);
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

  std::string Settle() override {
    rocksdb::CompactRangeOptions cro;
    rocksdb::Status s = db_->CompactRange(cro, nullptr, nullptr);
    return s.ok() ? std::string() : "CompactRange: " + s.ToString();
  }

  StoreStats Stats() override {
    StoreStats out;
    out.log_bytes = stats_->getTickerCount(rocksdb::WAL_FILE_BYTES);
    out.flush_bytes = stats_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
    out.compaction_bytes = stats_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
    uint64_t live = 0;
    if (db_->GetIntProperty(rocksdb::DB::Properties::kLiveSstFilesSize, &live)) {
      out.table_bytes = live;
    }
    std::vector<uint64_t> files;
    for (int l = 0; l < db_->NumberLevels(); l++) {
      std::string v;
      db_->GetProperty(rocksdb::DB::Properties::kNumFilesAtLevelPrefix + std::to_string(l), &v);
      files.push_back(std::strtoull(v.c_str(), nullptr, 10));
    }
    out.level_files = LevelString(files);
    return out;
  }

  std::string Close() override {
    rocksdb::Status s = db_->Close();
    db_.reset();
    return s.ok() ? std::string() : "rocksdb::DB::Close: " + s.ToString();
  }

 private:
  RocksStore() = default;

  std::unique_ptr<rocksdb::DB> db_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  rocksdb::WriteOptions write_options_;
  rocksdb::ReadOptions read_options_;
};
#endif  // STRATA_HAVE_ROCKSDB

// ---- Running one phase ------------------------------------------------------------

struct PhaseResult {
  bool ran = false;
  double seconds = 0;
  uint64_t ops = 0;
  uint64_t found = 0;
  strata::Histogram latency_us;

  double OpsPerSec() const { return seconds > 0 ? ops / seconds : 0; }
  // As db_bench: writes count every key + value, reads only those found.
  double MBPerSec(const Flags& f, bool read) const {
    const double n = read ? static_cast<double>(found) : static_cast<double>(ops);
    return seconds > 0 ? n * static_cast<double>(f.key_size + f.value_size) / 1048576.0 / seconds
                       : 0;
  }
};

enum class Op { kWrite, kRead };

// Runs `ops` operations split over the threads; `key_of(thread, j)` names the
// key index and whether it is a missing key for the j-th operation of
// `thread`, which does operations [begin, end) of the phase. Prints progress
// to stderr every 10%.
template <typename KeyOf>
PhaseResult RunPhase(const Flags& f, const std::string& label, Store* store, Op op, uint64_t ops,
                     const ValueSource& values, KeyOf key_of) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::vector<strata::Histogram> hists(f.threads);
  std::vector<uint64_t> found(f.threads, 0);
  std::vector<std::string> errors(f.threads);
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < f.threads; t++) {
    workers.emplace_back([&, t] {
      const uint64_t begin = ops * t / f.threads;
      const uint64_t end = ops * (t + 1) / f.threads;
      std::string key;
      uint64_t pending = 0;
      for (uint64_t j = begin; j < end; j++) {
        const auto [index, missing] = key_of(t, j);
        MakeKey(f, index, missing, &key);
        const auto t0 = Clock::now();
        std::string err;
        if (op == Op::kWrite) {
          err = store->Put(key, values.Get(j * 7919 + index));
        } else {
          bool hit = false;
          err = store->Get(key, f.value_size, &hit);
          found[t] += hit ? 1 : 0;
        }
        const auto t1 = Clock::now();
        hists[t].Add(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (!err.empty()) {
          errors[t] = err;
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
    r.found += found[t];
  }
  r.ran = true;
  r.ops = ops;
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

struct EngineRun {
  std::vector<PhaseResult> phases;  // one per --benchmarks entry
  AmpResult amp;
  double settle_seconds = -1;
  std::string settle_shape;  // files per level after settling
};

using OpenFn = std::unique_ptr<Store> (*)(const Flags&, const std::string&, bool, std::string*);

void Check(const std::string& err) {
  if (!err.empty()) {
    std::fprintf(stderr, "db_bench: %s\n", err.c_str());
    std::exit(1);
  }
}

EngineRun RunEngine(const Flags& f, const char* engine_name, OpenFn open, const std::string& dir,
                    const std::string& compression) {
  const bool zstd = compression == "zstd";
  const ValueSource values(f.seed, f.value_size);
  const uint64_t reads = f.reads.value_or(f.num);
  const uint64_t entry_bytes = f.key_size + f.value_size;
  EngineRun run;
  std::unique_ptr<Store> store;
  bool dirty = false;  // written since the last settle
  uint64_t user_bytes = 0;

  auto fresh = [&] {
    if (store) Check(store->Close());
    store.reset();
    std::filesystem::remove_all(dir);
    std::string err;
    store = open(f, dir, zstd, &err);
    Check(err);
    user_bytes = 0;
  };
  // The key order of fillrandom: every key once, shuffled.
  auto shuffled = [&] {
    std::vector<uint64_t> order(f.num);
    for (uint64_t i = 0; i < f.num; i++) order[i] = i;
    strata::Random rnd(f.seed);
    for (uint64_t i = f.num - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);
    return order;
  };
  auto fill_random = [&](const std::string& label) {
    fresh();
    const std::vector<uint64_t> order = shuffled();
    PhaseResult r = RunPhase(f, label, store.get(), Op::kWrite, f.num, values,
                             [&](int, uint64_t j) { return std::pair(order[j], false); });
    user_bytes += f.num * entry_bytes;
    dirty = true;
    return r;
  };

  for (const std::string& bench : f.benchmarks) {
    const std::string label = std::string(engine_name) + " " + compression + " " + bench;
    PhaseResult r;
    if (bench == "fillseq") {
      fresh();
      r = RunPhase(f, label, store.get(), Op::kWrite, f.num, values,
                   [](int, uint64_t j) { return std::pair(j, false); });
      user_bytes += f.num * entry_bytes;
      dirty = true;
    } else if (bench == "fillrandom") {
      r = fill_random(label);
    } else if (bench == "overwrite") {
      if (!store) {
        std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                     label.c_str());
        (void)fill_random(label + " (load)");
      }
      std::vector<strata::Random> rnds;
      for (int t = 0; t < f.threads; t++) rnds.emplace_back(f.seed * 1000 + 17 + t);
      r = RunPhase(f, label, store.get(), Op::kWrite, f.num, values, [&](int t, uint64_t) {
        return std::pair(rnds[t].Uniform(f.num), false);
      });
      user_bytes += f.num * entry_bytes;
      dirty = true;
      run.amp.ran = true;
      run.amp.after_overwrite = store->Stats();
      run.amp.user_bytes = user_bytes;
      run.amp.logical_bytes = f.num * entry_bytes;
      run.amp.settled = false;
    } else {  // readrandom, readmissing
      if (!store) {
        std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                     label.c_str());
        (void)fill_random(label + " (load)");
      }
      if (dirty) {
        std::fprintf(stderr, "  %s: settling before reads\n", label.c_str());
        const auto t0 = Clock::now();
        Check(store->Settle());
        run.settle_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        const StoreStats s = store->Stats();
        run.settle_shape = s.level_files;
        if (run.amp.ran && !run.amp.settled) {
          run.amp.after_settle = s;
          run.amp.settled = true;
        }
        dirty = false;
      }
      const bool missing = bench == "readmissing";
      std::vector<strata::Random> rnds;
      for (int t = 0; t < f.threads; t++) {
        rnds.emplace_back(f.seed * 2000 + (missing ? 500 : 0) + t);
      }
      r = RunPhase(f, label, store.get(), Op::kRead, reads, values, [&](int t, uint64_t) {
        return std::pair(rnds[t].Uniform(f.num), missing);
      });
    }
    std::fprintf(stderr, "  %-32s done: %.0f ops/s in %.1f s\n", label.c_str(), r.OpsPerSec(),
                 r.seconds);
    run.phases.push_back(std::move(r));
  }
  if (store) Check(store->Close());
  store.reset();
  std::filesystem::remove_all(dir);
  return run;
}

// ---- Printing -----------------------------------------------------------------------

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Ratio(double a, double b) { return b > 0 ? Fmt("%.2fx", a / b) : "n/a"; }

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
    const PhaseResult& a = s.phases[i];
    const PhaseResult* b = r ? &r->phases[i] : nullptr;
    const std::string lat_a =
        Fmt("%.1f", a.latency_us.Percentile(50)) + " / " + Fmt("%.1f", a.latency_us.Percentile(99));
    const std::string lat_b = b ? Fmt("%.1f", b->latency_us.Percentile(50)) + " / " +
                                      Fmt("%.1f", b->latency_us.Percentile(99))
                                : "n/a";
    std::string extra;
    if (b) {
      extra = Ratio(a.latency_us.Percentile(50), b->latency_us.Percentile(50)) + ", " +
              Ratio(a.latency_us.Percentile(99), b->latency_us.Percentile(99));
    }
    const bool read = f.benchmarks[i].rfind("read", 0) == 0;
    if (read) {
      extra += "; found " + std::to_string(a.found) + (b ? " / " + std::to_string(b->found) : "") +
               " of " + std::to_string(a.ops);
    }
    std::printf("%-12s | %12.0f %12s %7s | %8.1f %8s | %17s %17s | %s\n", f.benchmarks[i].c_str(),
                a.OpsPerSec(), b ? Fmt("%.0f", b->OpsPerSec()).c_str() : "n/a",
                b ? Ratio(a.OpsPerSec(), b->OpsPerSec()).c_str() : "n/a",
                a.MBPerSec(f, read), b ? Fmt("%.1f", b->MBPerSec(f, read)).c_str() : "n/a",
                lat_a.c_str(), lat_b.c_str(), extra.c_str());
  }
  if (s.settle_seconds >= 0) {
    std::printf("settle before reads (Strata Engine::Compact, RocksDB CompactRange over all "
                "keys): Strata %.1f s -> %s; RocksDB %s -> %s\n",
                s.settle_seconds, s.settle_shape.c_str(),
                r ? Fmt("%.1f s", r->settle_seconds).c_str() : "n/a",
                r ? r->settle_shape.c_str() : "n/a");
  }
  if (!s.amp.ran) return;
  auto wa_log = [](const AmpResult& a) {
    const StoreStats& x = a.after_overwrite;
    return x.log_bytes ? static_cast<double>(x.flush_bytes + x.compaction_bytes) / x.log_bytes
                       : 0.0;
  };
  auto wa_user = [](const AmpResult& a) {
    const StoreStats& x = a.after_overwrite;
    return a.user_bytes ? static_cast<double>(x.flush_bytes + x.compaction_bytes) / a.user_bytes
                        : 0.0;
  };
  auto sa = [](const AmpResult& a, const StoreStats& x) {
    return a.logical_bytes ? static_cast<double>(x.table_bytes) / a.logical_bytes : 0.0;
  };
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
  row("write amp (flush+compaction) / log bytes", Fmt("%.2f", wa_log(A)),
      B ? Fmt("%.2f", wa_log(*B)) : "n/a", B ? Ratio(wa_log(A), wa_log(*B)) : "n/a");
  row("write amp (flush+compaction) / user bytes", Fmt("%.2f", wa_user(A)),
      B ? Fmt("%.2f", wa_user(*B)) : "n/a", B ? Ratio(wa_user(A), wa_user(*B)) : "n/a");
  row("table MB on disk after overwrite", mb(ao.table_bytes),
      B ? mb(B->after_overwrite.table_bytes) : "n/a",
      B ? Ratio(ao.table_bytes, B->after_overwrite.table_bytes) : "n/a");
  row("space amp after overwrite (tables / live k+v)", Fmt("%.2f", sa(A, ao)),
      B ? Fmt("%.2f", sa(*B, B->after_overwrite)) : "n/a",
      B ? Ratio(sa(A, ao), sa(*B, B->after_overwrite)) : "n/a");
  row("files per level after overwrite", ao.level_files,
      B ? B->after_overwrite.level_files : "n/a", "");
  if (A.settled) {
    const bool b_settled = B && B->settled;
    row("space amp after settling", Fmt("%.2f", sa(A, A.after_settle)),
        b_settled ? Fmt("%.2f", sa(*B, B->after_settle)) : "n/a",
        b_settled ? Ratio(sa(A, A.after_settle), sa(*B, B->after_settle)) : "n/a");
  }
  std::printf("(RocksDB: log = WAL_FILE_BYTES, flush = FLUSH_WRITE_BYTES, compaction = "
              "COMPACT_WRITE_BYTES tickers, tables = rocksdb.live-sst-files-size; Strata: "
              "EngineStats wal_bytes, flush_bytes_written, compaction_bytes_written, "
              "table_bytes. Live k+v = num * (key_size + value_size) = %s MB.)\n",
              mb(A.logical_bytes).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);

  namespace fs = std::filesystem;
  const bool own_root = f.db.empty();
  const fs::path root = own_root ? fs::temp_directory_path() /
                                       ("strata-db_bench-" + std::to_string(::getpid()))
                                 : fs::path(f.db);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) Check("cannot create " + root.string() + ": " + ec.message());

  std::printf("db_bench: Strata vs RocksDB\n");
  std::printf("num=%" PRIu64 " reads=%" PRIu64 " threads=%d key_size=%zu value_size=%zu "
              "cache_mb=%zu write_buffer_mb=%zu sync=%d dir=%s\n",
              f.num, f.reads.value_or(f.num), f.threads, f.key_size, f.value_size, f.cache_mb,
              f.write_buffer_mb, f.sync ? 1 : 0, root.string().c_str());
  std::printf("both: bloom 10 bits/key, 16 KiB blocks, log on, zstd level 3 when compressed; "
              "engines run one after the other; reads start after both settle (Strata "
              "Engine::Compact, RocksDB CompactRange over all keys)\n");
#ifndef STRATA_HAVE_ROCKSDB
  std::printf("RocksDB was not found at build time: Strata only\n");
#endif
  std::fflush(stdout);

  struct Report {
    std::string compression;
    EngineRun strata;
    std::optional<EngineRun> rocks;
  };
  std::vector<Report> reports;
  const auto t0 = Clock::now();
  for (const std::string& c : f.compressions) {
    Report rep;
    rep.compression = c;
    rep.strata = RunEngine(f, "strata", &StrataStore::Open, (root / ("strata-" + c)).string(), c);
#ifdef STRATA_HAVE_ROCKSDB
    rep.rocks = RunEngine(f, "rocksdb", &RocksStore::Open, (root / ("rocksdb-" + c)).string(), c);
#endif
    PrintTable(f, c, rep.strata, rep.rocks ? &*rep.rocks : nullptr);
    std::fflush(stdout);
    reports.push_back(std::move(rep));
  }
  std::printf("\ntotal %.0f s. Compare only within this run on this machine.\n",
              std::chrono::duration<double>(Clock::now() - t0).count());

  if (own_root) {
    fs::remove_all(root, ec);
  } else {
    for (const std::string& c : f.compressions) {
      fs::remove_all(root / ("strata-" + c), ec);
      fs::remove_all(root / ("rocksdb-" + c), ec);
    }
  }
  return 0;
}
