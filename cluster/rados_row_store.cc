// RadosRowStore's calls (rados_row_store.h), its read sessions, and the
// functions of strata/rados.h.
#include "cluster/rados_row_store.h"

#include "cluster/rados_keys.h"
#include "engine/copied_rows.h"
#include "engine/input_checks.h"

namespace strata::cluster {
namespace {

std::vector<engine::ConditionalRow> ConditionalRows(const std::vector<ConditionalMutation>& batch) {
  std::vector<engine::ConditionalRow> rows;
  rows.reserve(batch.size());
  for (const ConditionalMutation& m : batch) rows.push_back({m.row, &m.conditions, &m.mutation});
  return rows;
}

}  // namespace

Result<std::unique_ptr<EtcdClient>> OpenEtcdFor(const RadosOptions& options) {
  if (options.timeout_millis == 0) {
    return Status::InvalidArgument("RadosOptions: timeout_millis is 0");
  }
  EtcdOptions etcd;
  etcd.endpoints = options.etcd_endpoints;
  etcd.call_timeout_millis = options.timeout_millis;
  return EtcdClient::Open(etcd);
}

Result<Connection> Connect(const RadosOptions& options) {
  Connection c;
  STRATA_ASSIGN_OR_RETURN(c.etcd, OpenEtcdFor(options));
  STRATA_ASSIGN_OR_RETURN(c.rados, RadosCluster::Connect(options.ceph_conf, options.ceph_user,
                                                         options.pool, options.timeout_millis));
  return c;
}

Result<std::vector<Cell>> RadosRowStore::ReadRow(const ReadOptions& options, std::string_view row,
                                                 const RowFilter& filter) const {
  STRATA_RETURN_IF_ERROR(engine::ValidateRowKey(state_->limits(), row));
  STRATA_ASSIGN_OR_RETURN(CellFilter f, state_->Resolve(filter));
  OmapEntries entries;
  STRATA_RETURN_IF_ERROR(
      state_->ReadRowKeys(row, state_->RangesFor(row, f), state_->Deadline(), &entries));
  std::vector<std::pair<std::string_view, std::string_view>> views;
  views.reserve(entries.size());
  for (const auto& [k, v] : entries) views.emplace_back(k, v);
  std::vector<Cell> cells;
  STRATA_RETURN_IF_ERROR(state_->AppendCells(views, f, &cells));
  return cells;
}

Status RadosRowStore::Mutate(const WriteOptions& options, std::string_view row,
                             const RowMutation& mutation) {
  STRATA_RETURN_IF_ERROR(
      engine::ValidateMutation(state_->limits(), state_->name(), state_->schema(), row, mutation));
  static const std::vector<Condition> kNone;
  return RadosWriteRows(state_.get(), {RowWrite{row, &kNone, &mutation}}).status();
}

Result<CheckAndMutateResult> RadosRowStore::CheckAndMutate(const WriteOptions& options,
                                                           std::string_view row,
                                                           const std::vector<Condition>& conditions,
                                                           const RowMutation& mutation) {
  STRATA_RETURN_IF_ERROR(engine::ValidateConditionalRows(
      state_->limits(), state_->name(), state_->schema(), {{row, &conditions, &mutation}},
      /*batch=*/false));
  STRATA_ASSIGN_OR_RETURN(std::vector<CheckAndMutateResult> results,
                          RadosWriteRows(state_.get(), {RowWrite{row, &conditions, &mutation}}));
  return std::move(results[0]);
}

Result<std::vector<CheckAndMutateResult>> RadosRowStore::CheckAndMutateBatch(
    const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
  const std::vector<engine::ConditionalRow> rows = ConditionalRows(batch);
  STRATA_RETURN_IF_ERROR(engine::ValidateConditionalRows(state_->limits(), state_->name(),
                                                         state_->schema(), rows, /*batch=*/true));
  STRATA_RETURN_IF_ERROR(engine::CheckDistinctRows(rows));
  std::vector<RowWrite> writes;
  writes.reserve(batch.size());
  for (const ConditionalMutation& m : batch) writes.push_back({m.row, &m.conditions, &m.mutation});
  return RadosWriteRows(state_.get(), writes);
}

Result<std::unique_ptr<RowIterator>> RadosRowStore::Scan(const ReadOptions& options,
                                                         const ScanSpec& spec) const {
  return RadosScan(state_, spec);
}

Result<std::unique_ptr<ReadSession>> RadosRowStore::NewReadSession(
    const ReadSessionOptions& options) const {
  STRATA_RETURN_IF_ERROR(engine::CheckReadSessionOptions(options));
  // Gets fetch their one column (one RADOS read) and cache it. No
  // prediction yet: a later step may read the columns a session is likely
  // to want in the same operation.
  auto store = std::make_shared<RadosRowStore>(state_);
  return std::unique_ptr<ReadSession>(std::make_unique<engine::ColumnCacheSession>(
      [store](std::string_view row, const RowFilter& filter) {
        return store->ReadRow(ReadOptions(), row, filter);
      },
      options));
}

Result<std::unique_ptr<RowStore>> MakeRadosStore(const RadosOptions& options,
                                                 const std::string& name,
                                                 std::shared_ptr<RadosCluster> rados,
                                                 std::unique_ptr<EtcdClient> etcd,
                                                 RadosTableInfo map) {
  TableSchema schema;
  for (const std::string& f : map.families) schema.families.push_back({.name = f});
  STRATA_ASSIGN_OR_RETURN(engine::Schema resolved, engine::Schema::FromUser(schema));
  auto state = std::make_shared<RadosStoreState>(options, name, std::move(rados), std::move(etcd),
                                                 std::move(resolved), std::move(map));
  return std::unique_ptr<RowStore>(std::make_unique<RadosRowStore>(std::move(state)));
}

}  // namespace strata::cluster

namespace strata {

Status CreateRadosTable(const RadosOptions& options, const std::string& name,
                        const TableSchema& schema, const std::vector<std::string>& split_rows) {
  STRATA_RETURN_IF_ERROR(cluster::ValidateRadosTable(name, schema, split_rows));
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(options));
  return cluster::CreateRadosTableIn(c.etcd.get(), *c.rados, options.root, name, schema,
                                     split_rows);
}

Status SplitRadosTablet(const RadosOptions& options, const std::string& name,
                        const std::string& row) {
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(options));
  return cluster::SplitRadosTabletIn(
      c.etcd.get(), *c.rados, options.root, name, row,
      cluster::Clock::now() + std::chrono::milliseconds(options.timeout_millis));
}

Result<int> SplitLargeRadosTablets(const RadosOptions& options, const std::string& name,
                                   uint64_t max_keys) {
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(options));
  return cluster::SplitLargeRadosTabletsIn(c.etcd.get(), *c.rados, options.root, name, max_keys,
                                           options.timeout_millis);
}

Status DropRadosTable(const RadosOptions& options, const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(options));
  return cluster::DropRadosTableIn(c.etcd.get(), *c.rados, options.root, name);
}

Result<std::unique_ptr<RowStore>> OpenRadosRowStore(const RadosOptions& options,
                                                    const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(cluster::Connection c, cluster::Connect(options));
  STRATA_ASSIGN_OR_RETURN(cluster::RadosTableInfo map,
                          cluster::LoadRadosTable(c.etcd.get(), options.root, name));
  return cluster::MakeRadosStore(options, name, std::move(c.rados), std::move(c.etcd),
                                 std::move(map));
}

}  // namespace strata
