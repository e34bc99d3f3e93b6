// The row store on Ceph RADOS (cluster/README.md): tables whose tablets are
// RADOS objects, the cells of each in its omap, and whose schema and tablet
// map live in etcd. Any number of processes may open one table at once.
//
//   strata::RadosOptions o;
//   o.etcd_endpoints = {"http://10.0.0.1:2379"};
//   o.ceph_conf = "/etc/ceph/ceph.conf";
//   o.pool = "strata";
//   strata::Status s = strata::CreateRadosTable(o, "accounts", schema);
//   auto store = strata::OpenRadosRowStore(o, "accounts");
//
// The store keeps the contract of strata/row_store.h, with what RADOS cannot
// give said there in cluster/README.md: no all-or-nothing batch
// (CheckAndMutateAll is NotSupported), a batch's rows durable each on its own,
// and a Scan that reads its whole range when it is called.
//
// A build configured with -DSTRATA_WITH_RADOS=OFF links no librados, and
// every function here answers NotSupported.
//
// Thread-safe.
#ifndef STRATA_RADOS_H_
#define STRATA_RADOS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/options.h"
#include "strata/row_store.h"
#include "strata/status.h"
#include "strata/transaction.h"

namespace strata {

struct RadosOptions {
  // etcd's client URLs, host:port or http://host:port; at least one.
  std::vector<std::string> etcd_endpoints;
  // The etcd key prefix of the cluster (as ClusterServicesOptions::root).
  std::string root = "/strata";
  // The Ceph configuration file (monitors, auth); empty: librados' default
  // search (CEPH_CONF, /etc/ceph/ceph.conf, ...).
  std::string ceph_conf;
  // The Ceph user, without "client.".
  std::string ceph_user = "admin";
  // The pool that holds the tablet objects; it must exist.
  std::string pool = "strata";
  // How long one call may take, every RADOS and etcd request and retry
  // included (milliseconds): past it the call fails with TimedOut or
  // IOError, never with a wrong answer. The deadline is checked between a
  // call's rounds of requests, and each RADOS request is bounded by it
  // (rounded up to seconds), so a call that meets an OSD or monitor that
  // stops answering fails within about twice this long.
  uint64_t timeout_millis = 10000;
  // Conditions no single omap compare can say (a NoCellInRange over more
  // than one timestamp: a prewrite's) are checked by the OSD within the
  // write, one round trip, by a script run in Ceph's object class "lua"
  // (cls_lua), where the OSDs load it and let this user call it
  // (`osd class load list` and `osd class default list` naming lua, or *).
  // Where they do not, the first such write finds out and the connection
  // reads the row first from then on (two round trips). Off: always read.
  bool server_side_conditions = true;
  // A store splits a tablet it writes to once the tablet holds more than
  // this many keys (its cells, and one version key per row), in the
  // background, at the tablet's middle row (SplitLargeRadosTablets' rule):
  // it counts the tablet's keys after every split_keys / 4 of its own writes
  // there. Ceph warns above 200k keys per object. 0: never on its own.
  uint64_t split_keys = 100000;
  // The largest row key, qualifier and value the store accepts.
  RowStoreLimits limits = DefaultLimits();

  static RowStoreLimits DefaultLimits() {
    RowStoreLimits l;
    l.max_row_key_size = 4096;
    l.max_qualifier_size = 4096;
    l.max_value_size = 1 << 20;
    return l;
  }
};

// Creates table `name` with the families of `schema` (locality groups mean
// nothing on RADOS: the families' order is what counts) and one tablet per
// range between `split_rows` (sorted, distinct, non-empty). AlreadyExists
// when it exists; InvalidArgument for a bad schema or name (1 to 128 bytes
// of [A-Za-z0-9_.-]) or more than 253 families.
Status CreateRadosTable(const RadosOptions& options, const std::string& name,
                        const TableSchema& schema, const std::vector<std::string>& split_rows = {});

// Splits the tablet of table `name` that holds `row`, so that `row` starts
// a tablet of its own, while other processes read and write the table: the
// tablet's rows are copied into two new objects and the map swapped in
// etcd; calls on the old tablet meanwhile wait (they retry until their
// deadline) and then follow the new map, and no call answers from the old
// one. Ceph warns above 200k keys or 1 GiB per object: split a tablet well
// below that. One split per table runs at a time (others wait for it). A
// process that dies during a split leaves the tablet fenced until a client
// that needs it repairs it, once the split's etcd lease (5 s) has expired.
// InvalidArgument when `row` is empty or already starts a tablet; NotFound
// when the table does not exist; TimedOut past options.timeout_millis.
Status SplitRadosTablet(const RadosOptions& options, const std::string& name,
                        const std::string& row);

// Splits every tablet of table `name` that holds more than `max_keys` keys
// (its cells, and one version key per row) at its middle row, and the
// halves again while they hold more, counting each tablet's keys (a read of
// every key); returns how many splits it made. A tablet of one row is never
// split. For a maintenance job run now and then: with Ceph's warning at
// 200k keys per object, 100k is a fair `max_keys`. Each count and split
// has options.timeout_millis. InvalidArgument for a `max_keys` below 2.
Result<int> SplitLargeRadosTablets(const RadosOptions& options, const std::string& name,
                                   uint64_t max_keys);

// Removes table `name`: its etcd keys, then its objects. Stores open on it
// answer NotFound from then on. NotFound when it does not exist.
Status DropRadosTable(const RadosOptions& options, const std::string& name);

// A RowStore over table `name`; connects to etcd and the Ceph cluster within
// options.timeout_millis. NotFound when the table does not exist.
Result<std::unique_ptr<RowStore>> OpenRadosRowStore(const RadosOptions& options,
                                                    const std::string& name);

// Transactions over the RADOS tables under options.root whose families are
// the transactional schema's (CreateTable makes them, one tablet each),
// with the timestamps and liveness of `services`, which must be shared by
// every process that opens these tables (OpenClusterServices). The tables'
// stores share one connection to the cluster. Everything of
// strata/transaction.h holds, except:
//   - every commit takes two phases (one_phase_commit is ignored: RADOS has
//     no all-or-nothing batch of many rows);
//   - pessimistic transactions take turns on a key within one process; two
//     processes' pessimistic transactions on one key find out at prewrite,
//     as optimistic ones do;
//   - a table dropped (DropRadosTable) and made again under its name is
//     seen only by a TransactionDB opened after that.
// A GarbageCollector opened on it collects the tables in rounds, one task
// per tablet (there is no compaction to hook), and ObserverWorkers run on it
// as on any TransactionDB. InvalidArgument for bad options; the etcd or
// RADOS error when the cluster cannot be reached.
Result<std::unique_ptr<TransactionDB>> OpenRadosTransactionDB(
    std::shared_ptr<TransactionServices> services, const RadosOptions& rados_options,
    const TransactionDBOptions& options = {});

}  // namespace strata

#endif  // STRATA_RADOS_H_
