// SafepointStore: where a garbage collector keeps the safepoint it published
// (gc/collector.h), so that it never goes down, across restarts too. The
// local store is a file in the ceiling-file format of txn/FORMAT.md (two
// checksummed slots, written in turn); services shared by many processes
// keep it in their coordination service instead (OpenSharedSafepointStore).
//
// Implementations are thread-compatible: the collector calls them from its
// round, one at a time.
#ifndef STRATA_GC_SAFEPOINT_STORE_H_
#define STRATA_GC_SAFEPOINT_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "strata/status.h"
#include "txn/shared_safepoints.h"

namespace strata::gc {

class SafepointStore {
 public:
  virtual ~SafepointStore() = default;
  // The last safepoint made durable; 0 before the first.
  virtual uint64_t Get() const = 0;
  // Makes `safepoint` durable. On error Get() is unchanged.
  // REQUIRES: safepoint >= Get().
  virtual Status Raise(uint64_t safepoint) = 0;
};

// The store in the file at `path`, created (holding 0) when missing.
// Corruption when the file is damaged beyond both slots.
Status OpenLocalSafepointStore(FileSystem* fs, const std::string& path,
                               std::unique_ptr<SafepointStore>* result);

// A store in memory only (tests; a collector whose safepoint need not
// survive the process).
std::unique_ptr<SafepointStore> NewMemorySafepointStore(uint64_t initial = 0);

// The safepoint of `name` in `shared`, seen by every process
// (txn/shared_safepoints.h). Get() is the value read at open or last raised
// through this store, which may be above what the caller raised it to when
// another process raised it further. The shared store's errors at open.
Status OpenSharedSafepointStore(std::shared_ptr<txn::SharedSafepoints> shared, std::string name,
                                std::unique_ptr<SafepointStore>* result);

}  // namespace strata::gc

#endif  // STRATA_GC_SAFEPOINT_STORE_H_
