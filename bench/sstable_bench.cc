// SSTable micro-benchmarks: build throughput, and point lookups, random
// seeks and sequential scans of the reader, with and without the block
// cache, uncompressed and zstd.
//
// Data: 16-byte row keys (one column each), 100-byte values that compress
// to about half (as db_bench's), 16 KiB blocks, 10 bloom bits per key.
// Tables are in the writer's default format version; set
// SSTABLE_BENCH_FORMAT_VERSION=1 (or 2) to measure that version instead.
//
//   ninja -C build bench/sstable_bench && build/bench/sstable_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/random.h"
#include "sstable/block_cache.h"
#include "sstable/table_builder.h"
#include "sstable/table_reader.h"

namespace strata::sstable {
namespace {

constexpr int kNumCells = 200000;
constexpr size_t kValueSize = 100;

std::string Row(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llu", static_cast<unsigned long long>(i));
  return buf;
}

std::string CellKey(uint64_t i) {
  std::string k;
  AppendCellKey(&k, Row(i), 1, "c", 1000, 1, CellType::kPut);
  return k;
}

// Values of which about half is repeated, so zstd gets roughly 2:1.
std::string Value(Random* rnd) {
  std::string half = rnd->RandomBytes(kValueSize / 2);
  return half + half;
}

struct Dataset {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  uint64_t bytes = 0;
};

const Dataset& Data() {
  static const Dataset* d = [] {
    auto* d = new Dataset;
    Random rnd(301);
    for (int i = 0; i < kNumCells; i++) {
      // Even row numbers only, so odd ones are misses.
      d->keys.push_back(CellKey(2 * static_cast<uint64_t>(i)));
      d->values.push_back(Value(&rnd));
      d->bytes += d->keys.back().size() + d->values.back().size();
    }
    return d;
  }();
  return *d;
}

// A scratch directory, removed at exit.
struct BenchDir {
  BenchDir() {
    path = (std::filesystem::temp_directory_path() /
            ("strata-sst-bench-" + std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(path);
  }
  ~BenchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string Join(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

BenchDir& Dir() {
  static BenchDir dir;
  return dir;
}

uint32_t FormatVersion() {
  static const uint32_t v = [] {
    const char* env = std::getenv("SSTABLE_BENCH_FORMAT_VERSION");
    return env != nullptr ? static_cast<uint32_t>(std::atoi(env)) : kFormatVersion;
  }();
  return v;
}

TableBuilderOptions BuilderOptions(bool zstd) {
  TableBuilderOptions o;
  o.format_version = FormatVersion();
  o.compression = zstd ? CompressionType::kZstd : CompressionType::kNone;
  o.compression_level = 3;
  o.block_size = 16 << 10;
  o.bloom_bits_per_key = 10;
  o.file_number = zstd ? 2 : 1;
  return o;
}

uint64_t BuildTable(const std::string& path, bool zstd) {
  const Dataset& d = Data();
  std::unique_ptr<WritableFile> file;
  if (!FileSystem::Default()->NewWritableFile(path, FileOpenOptions{}, &file).ok()) std::abort();
  TableBuilder b(BuilderOptions(zstd), file.get(), path);
  for (size_t i = 0; i < d.keys.size(); i++) {
    if (!b.Add(d.keys[i], d.values[i]).ok()) std::abort();
  }
  if (!b.Finish().ok() || !file->Close().ok()) std::abort();
  return b.FileSize();
}

void BM_Build(benchmark::State& state) {
  const bool zstd = state.range(0) != 0;
  const std::string path = Dir().Join(zstd ? "build-zstd.sst" : "build-none.sst");
  uint64_t size = 0;
  for (auto _ : state) size = BuildTable(path, zstd);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Data().bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kNumCells);
  state.counters["file_MB"] = static_cast<double>(size) / 1e6;
  state.SetLabel(zstd ? "zstd" : "none");
}
BENCHMARK(BM_Build)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// An open table, with or without a warmed cache holding all of it.
struct OpenTable {
  std::unique_ptr<BlockCache> cache;
  std::unique_ptr<TableReader> reader;
};

const OpenTable& Table(bool zstd, bool cached) {
  static std::map<std::pair<bool, bool>, OpenTable*> tables;
  auto& slot = tables[{zstd, cached}];
  if (slot == nullptr) {
    const std::string path = Dir().Join(zstd ? "read-zstd.sst" : "read-none.sst");
    if (!FileSystem::Default()->FileExists(path)) BuildTable(path, zstd);
    slot = new OpenTable;
    TableReaderOptions ro;
    if (cached) {
      slot->cache = std::make_unique<BlockCache>(256 << 20);
      ro.block_cache = slot->cache.get();
    }
    std::unique_ptr<RandomAccessFile> file;
    if (!FileSystem::Default()->NewRandomAccessFile(path, &file).ok()) std::abort();
    uint64_t size = *file->Size();
    auto r = TableReader::Open(ro, std::move(file), size, path);
    if (!r.ok()) std::abort();
    slot->reader = std::move(*r);
    auto it = slot->reader->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
    }  // warm the page cache and the block cache
  }
  return *slot;
}

const char* Label(bool zstd, bool cached) {
  if (zstd) return cached ? "zstd, block cache" : "zstd, no cache";
  return cached ? "none, block cache" : "none, no cache";
}

// Point lookup of an existing cell: bloom check, Seek, compare.
void BM_PointLookupHit(benchmark::State& state) {
  const bool zstd = state.range(0) != 0, cached = state.range(1) != 0;
  const OpenTable& t = Table(zstd, cached);
  const Dataset& d = Data();
  Random rnd(7);
  auto it = t.reader->NewIterator();
  uint64_t found = 0;
  for (auto _ : state) {
    const uint64_t i = rnd.Uniform(kNumCells);
    if (!t.reader->RowMayMatch(Row(2 * i))) continue;
    it->Seek(d.keys[i]);
    if (it->Valid() && it->key() == Slice(d.keys[i])) found++;
  }
  if (found != static_cast<uint64_t>(state.iterations())) state.SkipWithError("lookup missed");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(Label(zstd, cached));
}
BENCHMARK(BM_PointLookupHit)->ArgsProduct({{0, 1}, {0, 1}});

// Point lookup of an absent row: mostly answered by the bloom filter.
void BM_PointLookupMiss(benchmark::State& state) {
  const bool zstd = state.range(0) != 0, cached = state.range(1) != 0;
  const OpenTable& t = Table(zstd, cached);
  Random rnd(8);
  auto it = t.reader->NewIterator();
  uint64_t seeks = 0;
  for (auto _ : state) {
    const uint64_t row = 2 * rnd.Uniform(kNumCells) + 1;
    if (!t.reader->RowMayMatch(Row(row))) continue;
    seeks++;
    it->Seek(CellKey(row));
    benchmark::DoNotOptimize(it->Valid());
  }
  state.counters["fp_seeks"] = static_cast<double>(seeks);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(Label(zstd, cached));
}
BENCHMARK(BM_PointLookupMiss)->ArgsProduct({{0, 1}, {0, 1}});

// Seek to a random row (present or not) and read the next 10 cells.
void BM_SeekNext10(benchmark::State& state) {
  const bool zstd = state.range(0) != 0, cached = state.range(1) != 0;
  const OpenTable& t = Table(zstd, cached);
  Random rnd(9);
  auto it = t.reader->NewIterator();
  for (auto _ : state) {
    std::string target;
    AppendRowPrefix(&target, Row(rnd.Uniform(2 * kNumCells)));
    it->Seek(target);
    for (int i = 0; i < 10 && it->Valid(); i++) {
      benchmark::DoNotOptimize(it->value().data());
      it->Next();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(Label(zstd, cached));
}
BENCHMARK(BM_SeekNext10)->ArgsProduct({{0, 1}, {0, 1}});

// A full scan of the table.
void BM_Scan(benchmark::State& state) {
  const bool zstd = state.range(0) != 0, cached = state.range(1) != 0;
  const OpenTable& t = Table(zstd, cached);
  uint64_t cells = 0, bytes = 0;
  for (auto _ : state) {
    auto it = t.reader->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      cells++;
      bytes += it->key().size() + it->value().size();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(cells));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetLabel(Label(zstd, cached));
}
BENCHMARK(BM_Scan)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::sstable

BENCHMARK_MAIN();
