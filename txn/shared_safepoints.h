// SharedSafepoints: the GC safepoint kept where other processes see it,
// for services shared by many processes (strata/cluster.h; the etcd keys of
// cluster/etcd_safepoint.h). Local services have none.
//
// Each keyspace (a tenant, by name) has one published safepoint, only ever
// raised; every process publishes the oldest start_ts it has running in it;
// service safepoints held by any process count too. A garbage collector
// stores its safepoint here and caps its candidate by Floor(); a
// TransactionDB publishes its oldest running transaction.
//
// An interface of txn (not gc) because TransactionServices carries it to
// both; implementations are thread-safe.
#ifndef STRATA_TXN_SHARED_SAFEPOINTS_H_
#define STRATA_TXN_SHARED_SAFEPOINTS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "strata/status.h"

namespace strata::txn {

class SharedSafepoints {
 public:
  virtual ~SharedSafepoints() = default;

  // The published safepoint of `name`; 0 before the first.
  virtual Result<uint64_t> Get(std::string_view name) = 0;
  // Raises it to `safepoint` unless it is already at or above; returns the
  // safepoint now published.
  virtual Result<uint64_t> Raise(std::string_view name, uint64_t safepoint) = 0;
  // The lowest timestamp any live process's running transactions or any
  // unexpired service safepoint hold `name` at; UINT64_MAX when none.
  virtual Result<uint64_t> Floor(std::string_view name) = 0;
  // From now until `oldest` returns nullopt, publishes about every
  // kPublishMillis the lowest value `oldest` returns (the oldest start_ts
  // running; UINT64_MAX: none) as this process's hold on `name`, together
  // with every other tracker of `name` in the process. What is published
  // vanishes when the process dies. A GC life time longer than
  // kPublishMillis keeps a transaction that has begun but is not published
  // yet above every candidate safepoint.
  static constexpr uint64_t kPublishMillis = 500;
  virtual void Track(std::string_view name, std::function<std::optional<uint64_t>()> oldest) = 0;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_SHARED_SAFEPOINTS_H_
