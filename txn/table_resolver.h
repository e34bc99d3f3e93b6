// TableResolver: how the transaction layer finds a transactional table's row
// store (strata/row_store.h) by name, and TenantTables, the resolver over
// the tables of one engine tenant that TransactionDB::Open uses. Tests and
// benchmarks bring their own resolvers (in-memory stores, observing ones).
//
// Thread-safe: Resolve may be called from any thread (transactions, the
// heartbeat, the background commits and lock resolution all call it).
//
// Invariant of TenantTables: a store it hands out is for the table that had
// the name when it was cached; once that table is dropped, the next Resolve
// of the name opens the table now under it, if any.
#ifndef STRATA_TXN_TABLE_RESOLVER_H_
#define STRATA_TXN_TABLE_RESOLVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "strata/engine.h"
#include "strata/row_store.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::txn {

// Transactional tables by name.
class TableResolver {
 public:
  virtual ~TableResolver() = default;
  // The table's store; NotFound when there is no such table.
  virtual Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) = 0;
};

// The tables of one engine tenant, each opened once and its store cached.
class TenantTables final : public TableResolver {
 public:
  explicit TenantTables(Tenant tenant) : tenant_(std::move(tenant)) {}
  TenantTables(const TenantTables&) = delete;
  TenantTables& operator=(const TenantTables&) = delete;

  // The store of the table now under the name: a cached one whose table was
  // dropped gives way to the table created again under it, if any.
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override;

  Tenant& tenant() { return tenant_; }

 private:
  struct Cached {
    Table table;
    std::shared_ptr<RowStore> store;
  };
  Tenant tenant_;
  Mutex mu_;
  std::map<std::string, Cached, std::less<>> stores_ GUARDED_BY(mu_);
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TABLE_RESOLVER_H_
