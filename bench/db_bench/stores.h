// The two engines behind one interface: Store, which db_bench's workloads
// write and read through, its Cursor, and the openers of the Strata and (when
// built with it) RocksDB implementations; also CountingFileSystem, which counts
// a Strata engine's table-file reads for scansmall (thread-safe). The
// workloads' threads call Put, Get, PutRow and NewCursor of one Store at once;
// the other methods run while no other call is in progress, and each Cursor
// belongs to one thread.
#ifndef STRATA_BENCH_DB_BENCH_STORES_H_
#define STRATA_BENCH_DB_BENCH_STORES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/file_system.h"
#include "common/mutex.h"
#include "flags.h"
#include "util/forwarding_fs.h"

namespace strata::db_bench {

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

// Opens a Strata engine, or a RocksDB database, as `spec` describes, with the
// sizes and settings of `f`; nullptr with *error set when that fails.
std::unique_ptr<Store> OpenStrataStore(const Flags& f, const StoreSpec& spec, std::string* error);
#ifdef STRATA_HAVE_ROCKSDB
std::unique_ptr<Store> OpenRocksStore(const Flags& f, const StoreSpec& spec, std::string* error);
#endif

}  // namespace strata::db_bench

#endif  // STRATA_BENCH_DB_BENCH_STORES_H_
