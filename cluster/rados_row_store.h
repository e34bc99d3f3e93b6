// RadosRowStore: the row-store seam (strata/row_store.h) on Ceph RADOS, one
// table per store: each tablet a RADOS object whose omap holds the cells
// (rados_keys.h), the schema and tablet map in etcd (rados_table.h).
// OpenRadosRowStore (strata/rados.h) makes one; cluster/README.md has the
// design, what each call costs in RADOS round trips, and what it guarantees.
//
// Thread-safe; its iterators and read sessions are thread-compatible and
// keep the connection alive, so they may outlive the store.
#ifndef STRATA_CLUSTER_RADOS_ROW_STORE_H_
#define STRATA_CLUSTER_RADOS_ROW_STORE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/rados_store_state.h"
#include "strata/rados.h"
#include "strata/row_store.h"

namespace strata::cluster {

class RadosRowStore final : public RowStore {
 public:
  explicit RadosRowStore(std::shared_ptr<RadosStoreState> state) : state_(std::move(state)) {}

  RowStoreLimits GetLimits() const override { return state_->options().limits; }
  Result<std::vector<Cell>> ReadRow(const ReadOptions& options, std::string_view row,
                                    const RowFilter& filter) const override;
  Status Mutate(const WriteOptions& options, std::string_view row,
                const RowMutation& mutation) override;
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& options, std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation) override;
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) override;
  Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& options,
                                            const ScanSpec& spec) const override;
  Result<std::unique_ptr<ReadSession>> NewReadSession(
      const ReadSessionOptions& options) const override;

 private:
  const std::shared_ptr<RadosStoreState> state_;
};

// Scan's work (rados_scan.cc): every row of `spec` in one snapshot.
Result<std::unique_ptr<RowIterator>> RadosScan(std::shared_ptr<RadosStoreState> state,
                                               const ScanSpec& spec);

// The rows of a batch, each checked and applied atomically on its own, all
// in flight at once (rados_row_writes.cc). REQUIRES: the input was checked.
struct RowWrite {
  std::string_view row;
  const std::vector<Condition>* conditions = nullptr;
  const RowMutation* mutation = nullptr;
};
Result<std::vector<CheckAndMutateResult>> RadosWriteRows(RadosStoreState* state,
                                                         const std::vector<RowWrite>& rows);

// What every function of strata/rados.h opens: an etcd client and a pool
// connection, each bounded by options.timeout_millis (InvalidArgument when
// it is 0).
struct Connection {
  std::unique_ptr<EtcdClient> etcd;
  std::shared_ptr<RadosCluster> rados;
};
Result<std::unique_ptr<EtcdClient>> OpenEtcdFor(const RadosOptions& options);
Result<Connection> Connect(const RadosOptions& options);

// A store over table `name` whose map the caller has loaded with `etcd`
// (which the store keeps, for reloads), on a pool connection the caller may
// share among many tables' stores.
Result<std::unique_ptr<RowStore>> MakeRadosStore(const RadosOptions& options,
                                                 const std::string& name,
                                                 std::shared_ptr<RadosCluster> rados,
                                                 std::unique_ptr<EtcdClient> etcd,
                                                 RadosTableInfo map);

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_RADOS_ROW_STORE_H_
