// OpenRadosTransactionDB (strata/rados.h): a TxnDB whose tables are RADOS
// tables, resolved by name through one shared connection to the cluster.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/rados_row_store.h"
#include "cluster/rados_table.h"
#include "common/mutex.h"
#include "strata/rados.h"
#include "txn/records.h"
#include "txn/table_resolver.h"
#include "txn/transaction_db.h"

namespace strata::cluster {
namespace {

// Whether a table has the families of the transactional schema, in order
// (what IsTransactionalSchema checks of an engine table; RADOS tables keep
// no locality groups).
bool HasTransactionalFamilies(const RadosTableInfo& info) {
  const TableSchema want = txn::TransactionalSchema({});
  if (info.families.size() != want.families.size()) return false;
  for (size_t i = 0; i < want.families.size(); i++) {
    if (info.families[i] != want.families[i].name) return false;
  }
  return true;
}

// The transactional RADOS tables under options.root, each store opened once
// on the shared connection and cached.
class RadosTables final : public txn::TableResolver {
 public:
  RadosTables(RadosOptions options, Connection c)
      : options_(std::move(options)), rados_(std::move(c.rados)), etcd_(std::move(c.etcd)) {}

  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    {
      MutexLock l(&mu_);
      auto it = stores_.find(table);
      if (it != stores_.end()) return it->second;
    }
    // Opened outside the mutex: it reads the table's map from etcd, with
    // an etcd client the store keeps for its reloads.
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd, OpenEtcdFor(options_));
    STRATA_ASSIGN_OR_RETURN(RadosTableInfo map, LoadRadosTable(etcd.get(), options_.root, table));
    if (!HasTransactionalFamilies(map)) {
      return Status::InvalidArgument("RADOS table '" + std::string(table) +
                                     "' does not have the transactional families");
    }
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<RowStore> opened,
        MakeRadosStore(options_, std::string(table), rados_, std::move(etcd), std::move(map)));
    MutexLock l(&mu_);
    auto [it, inserted] = stores_.emplace(std::string(table), std::move(opened));
    return it->second;  // a racing Resolve's store when it was first
  }

  Status Create(std::string_view name, const TransactionalTableOptions& table_options) {
    // (CreateRadosTableIn checks the name and schema first.)
    return CreateRadosTableIn(etcd_.get(), *rados_, options_.root, std::string(name),
                              txn::TransactionalSchema(table_options), {});
  }

  Result<std::vector<std::string>> List() {
    STRATA_ASSIGN_OR_RETURN(auto tables, LoadRadosTables(etcd_.get(), options_.root));
    std::vector<std::string> names;
    for (const auto& [name, info] : tables) {
      if (HasTransactionalFamilies(info)) names.push_back(name);
    }
    return names;
  }

  Result<std::vector<std::string>> SplitRows(std::string_view name) {
    STRATA_ASSIGN_OR_RETURN(RadosTableInfo info, LoadRadosTable(etcd_.get(), options_.root, name));
    std::vector<std::string> rows;
    for (const RadosTablet& t : info.tablets) {
      if (!t.start_row.empty()) rows.push_back(t.start_row);
    }
    return rows;
  }

 private:
  const RadosOptions options_;
  const std::shared_ptr<RadosCluster> rados_;
  const std::unique_ptr<EtcdClient> etcd_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<RowStore>, std::less<>> stores_ GUARDED_BY(mu_);
};

// The name the TxnDB's collector keeps its state under, and its oldest
// transaction is published under: no tenant's (tenant names have no ':').
std::string RadosTransactionDBName(std::string_view root) {
  std::string name = "rados:" + std::string(root);
  for (char& c : name) {
    if (c == '/') c = ':';
  }
  return name;
}

}  // namespace
}  // namespace strata::cluster

namespace strata {

Result<std::unique_ptr<TransactionDB>> OpenRadosTransactionDB(
    std::shared_ptr<TransactionServices> services, const RadosOptions& rados_options,
    const TransactionDBOptions& options) {
  if (services == nullptr) return Status::InvalidArgument("no TransactionServices");
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(rados_options));
  auto tables = std::make_shared<cluster::RadosTables>(rados_options, std::move(c));
  txn::TxnDBConfig config;
  config.options = options;
  // RADOS has no all-or-nothing batch of many rows: every commit takes the
  // two phases.
  config.options.one_phase_commit = false;
  config.tables = tables;
  config.single_log = false;  // each tablet object is durable on its own
  config.create_table = [tables](std::string_view name, const TransactionalTableOptions& o) {
    return tables->Create(name, o);
  };
  config.list_tables = [tables] { return tables->List(); };
  config.split_rows = [tables](std::string_view name) { return tables->SplitRows(name); };
  config.name = cluster::RadosTransactionDBName(rados_options.root);
  return txn::MakeOnServices(std::move(services), std::move(config));
}

}  // namespace strata
