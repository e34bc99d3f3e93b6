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
// on it checks that xattr: a split (SplitRadosTabletIn) fences the tablet it
// replaces by changing that epoch before it swaps the map (an etcd
// transaction on the key's mod revision) and removes the old object after,
// so a client with a stale map fails (-ECANCELED, or -ENOENT once the
// object is gone) and reloads it. Tablets a split makes are named
// "<the table's object prefix>.s<nonce>a" and "...b", epoch "1".
//
// Thread-safe (pure functions and calls on thread-safe clients).
#ifndef STRATA_CLUSTER_RADOS_TABLE_H_
#define STRATA_CLUSTER_RADOS_TABLE_H_

#include <chrono>
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
// The part of a tablet object's name that one incarnation of a table shares
// ("strata.<name>.<random id>"): a table dropped and created again has
// another.
inline std::string RadosObjectIncarnation(const std::string& object) {
  return object.substr(0, object.rfind('.'));
}

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
// Splits the tablet that holds `split_row` so that `split_row` starts a
// tablet of its own (rados_split.cc says how), within `deadline`.
// InvalidArgument when `split_row` is empty or already starts a tablet;
// NotFound when the table does not exist; Busy when `only_object` is given
// and the tablet that holds the row is no longer that object.
Status SplitRadosTabletIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                          const std::string& name, const std::string& split_row,
                          std::chrono::steady_clock::time_point deadline,
                          const std::string& only_object = "");
// SplitLargeRadosTablets (strata/rados.h): splits tablets over `max_keys` keys
// at their middle row until none is; each count and split within
// `timeout_millis`. Returns the number of splits.
Result<int> SplitLargeRadosTabletsIn(EtcdClient* etcd, const RadosCluster& rados,
                                     std::string_view root, const std::string& name,
                                     uint64_t max_keys, uint64_t timeout_millis);
// What SplitTabletIfOver found.
enum class TabletCheck {
  kSplit,       // over the limit: split
  kUnderLimit,  // at or under it
  kOneRow,      // over it, but one row: left whole
  kRaced,       // fenced, split or removed meanwhile: look at the map again
};
// Splits `tablet` of table `name` at its middle row if it holds more than
// `max_keys` keys; *result says what it found and did.
Status SplitTabletIfOver(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                         const std::string& name, const RadosTablet& tablet, uint64_t max_keys,
                         std::chrono::steady_clock::time_point deadline, TabletCheck* result);
// Repairs tablet `index` of `map` if a split that died left it fenced and
// `map` is still the table's map. Always OK: a repair that cannot be made
// now (etcd unreachable, another repair first) is left to a later call.
Status RecoverRadosFence(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                         const std::string& name, const RadosTableInfo& map, size_t index);
// Deletes the table's key, then its objects.
Status DropRadosTableIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                        const std::string& name);

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_RADOS_TABLE_H_
