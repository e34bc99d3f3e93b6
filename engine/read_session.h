// Read sessions (strata/read_session.h) on the engine side: TableReadState,
// what the sessions of one table share — the table's PrefetchPredictor and the
// totals of their counters — and the factory of the session implementation.
//
// TableReadState is thread-safe; a session is thread-compatible.
#ifndef STRATA_ENGINE_READ_SESSION_H_
#define STRATA_ENGINE_READ_SESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/prefetch_predictor.h"
#include "strata/options.h"
#include "strata/read_session.h"
#include "strata/status.h"

namespace strata::engine {

class EngineCore;
struct TableState;

class TableReadState {
 public:
  TableReadState() = default;
  TableReadState(const TableReadState&) = delete;
  TableReadState& operator=(const TableReadState&) = delete;

  PrefetchPredictor& predictor() { return predictor_; }

  // Adds one ended session's counters to the totals.
  void Add(const ReadStats& session);
  ReadStats Totals() const;

 private:
  PrefetchPredictor predictor_;
  // Relaxed: counters with no ordering duties.
  std::atomic<uint64_t> sessions_{0};
  std::atomic<uint64_t> gets_{0};
  std::atomic<uint64_t> cache_hits_{0};
  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> prefetched_columns_{0};
  std::atomic<uint64_t> prefetched_cells_{0};
  std::atomic<uint64_t> prefetch_hits_{0};
};

// A session over `table`. InvalidArgument for a bad timestamp range or
// max_versions of 0, NotFound when the table was dropped.
Result<std::unique_ptr<ReadSession>> NewReadSession(std::shared_ptr<EngineCore> core,
                                                    std::shared_ptr<TableState> table,
                                                    const ReadSessionOptions& options);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_READ_SESSION_H_
