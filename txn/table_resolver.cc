#include "txn/table_resolver.h"

#include <utility>

namespace strata::txn {

Result<std::shared_ptr<RowStore>> TenantTables::Resolve(std::string_view table) {
  {
    MutexLock l(&mu_);
    auto it = stores_.find(table);
    if (it != stores_.end() && !it->second.table.dropped()) return it->second.store;
  }
  STRATA_ASSIGN_OR_RETURN(Table t, tenant_.OpenTable(table));
  Cached fresh{t, NewTableRowStore(t)};
  MutexLock l(&mu_);
  auto [it, inserted] = stores_.try_emplace(std::string(table), fresh);
  // A racing call may have cached the same table, or a stale one.
  if (!inserted && it->second.table.dropped()) it->second = std::move(fresh);
  return it->second.store;
}

}  // namespace strata::txn
