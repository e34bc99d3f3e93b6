// A RADOS table's description in etcd: its families and its tablet map, one
// key per table (cluster/README.md, "The row store on RADOS"), and creating
// and dropping a table (its etcd key and its tablet objects).
//
// Key: <root>/rados/tables/<name>/map. Value, text lines:
//   strata-rados-table 1
//   families <n>         then n lines, one family name each, in schema order
//   tablets <m>          then m lines: <start row hex or -> <object> <epoch>
// The tablets are sorted by start row; the first starts at "" ("-"). Each
// tablet object carries its epoch in xattr kEpochXattr, and every operation
// on it checks that xattr: a split (a later step) changes the epoch of the
// tablets it replaces before it swaps the map (an etcd transaction on the
// key's mod revision), so a client with a stale map fails and reloads it.
//
// Thread-safe (pure functions and calls on thread-safe clients).
#ifndef STRATA_CLUSTER_RADOS_TABLE_H_
#define STRATA_CLUSTER_RADOS_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/rados_io.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata::cluster {

// DO NOT CHANGE: stored on tablet objects.
inline constexpr char kEpochXattr[] = "strata.epoch";

struct RadosTablet {
  // Intentionally copyable.
  std::string start_row;  // the tablet holds rows from here to the next tablet's start
  std::string object;
  std::string epoch;  // decimal; what kEpochXattr holds
};

struct RadosTableInfo {
  // Intentionally copyable.
  std::vector<std::string> families;
  std::vector<RadosTablet> tablets;
  int64_t mod_revision = 0;  // of the etcd key it was read from

  std::string Encode() const;
  static Result<RadosTableInfo> Decode(std::string_view text);
  // The index of the tablet that holds `row`.
  size_t TabletFor(std::string_view row) const;
  // The end of tablet i's rows ("" for the last: no end).
  const std::string& TabletEnd(size_t i) const;
};

std::string RadosTableKey(std::string_view root, std::string_view name);

// The checks CreateRadosTable makes of its input (strata/rados.h).
Status ValidateRadosTable(const std::string& name, const TableSchema& schema,
                          const std::vector<std::string>& split_rows);

// Creates the tablet objects, then the table's key (if it does not exist).
Status CreateRadosTableIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                          const std::string& name, const TableSchema& schema,
                          const std::vector<std::string>& split_rows);
// NotFound when the table does not exist.
Result<RadosTableInfo> LoadRadosTable(EtcdClient* etcd, std::string_view root,
                                      std::string_view name);
// Every table under `root`, by name (one etcd range read).
Result<std::map<std::string, RadosTableInfo>> LoadRadosTables(EtcdClient* etcd,
                                                              std::string_view root);
// Deletes the table's key, then its objects.
Status DropRadosTableIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                        const std::string& name);

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_RADOS_TABLE_H_
