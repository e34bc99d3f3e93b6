// TableFile: an SSTable as the engine's views hold it, and ObsoleteFiles, the
// numbers of files whose last holder is gone, waiting to be deleted.
//
// A file replaced by a compaction (or dropped with its table) is marked
// obsolete; it is deleted only once the last view holding it goes, so no
// reader ever finds it missing.
//
// ObsoleteFiles is thread-safe; a TableFile's `meta` is immutable and its
// flags say how they are synchronised.
#ifndef STRATA_ENGINE_TABLE_FILE_H_
#define STRATA_ENGINE_TABLE_FILE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "engine/file_meta.h"

namespace strata::engine {

// File numbers whose last reference is gone, waiting to be deleted.
class ObsoleteFiles {
 public:
  void Add(uint64_t number) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    numbers_.push_back(number);
  }
  std::vector<uint64_t> Take() LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return std::move(numbers_);
  }

 private:
  Mutex mu_;
  std::vector<uint64_t> numbers_ GUARDED_BY(mu_);
};

// A live SSTable as views hold it. Once a compaction replaces it, it is
// marked obsolete; when the last view holding it goes, its number is handed
// to ObsoleteFiles for deletion, so no reader ever finds it missing.
struct TableFile {
  TableFile(FileMeta m, std::shared_ptr<ObsoleteFiles> o)
      : meta(std::move(m)), obsolete_list(std::move(o)) {}
  ~TableFile() {
    // Relaxed: set before the compaction publishes the view without this
    // file; whoever drops the last reference got it through that mutex.
    if (obsolete.load(std::memory_order_relaxed)) obsolete_list->Add(meta.number);
  }
  TableFile(const TableFile&) = delete;
  TableFile& operator=(const TableFile&) = delete;

  const FileMeta meta;
  const std::shared_ptr<ObsoleteFiles> obsolete_list;
  std::atomic<bool> obsolete{false};
  // An input of a running compaction; no other compaction may take it.
  // Guarded by the engine's background mutex (EngineCore::bg_mu_).
  bool being_compacted = false;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_TABLE_FILE_H_
