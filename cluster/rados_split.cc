// Tablet splits of RADOS tables (rados_table.h, "Splits").
//
// A split of tablet T (object O at epoch E) at row R:
//   1. takes the table's split key in etcd, on a lease, in a transaction
//      that also checks the map is the one read (one split per table at a
//      time; its value names the split's nonce);
//   2. fences O: its epoch xattr E becomes "split-<nonce>" in one compare-
//      and-set, after which every client operation on O fails its epoch
//      compare (-ECANCELED) and the client reloads the map;
//   3. copies O's keys, read page by page from the fenced object, into two
//      new objects "<incarnation>.s<nonce>a" (rows below R) and "...b";
//   4. swaps the map in one etcd transaction, if the map is still the one
//      read and the split key still holds this split's value, and deletes
//      the split key;
//   5. removes O. A client still holding the old map then meets a missing
//      object, which it treats as a fence.
// A split that fails before its swap takes its own fence off (a compare-
// and-set from its fence, so never another's) and removes its objects; one
// whose swap reply is lost first makes the outcome known (DecideSwap) and,
// if it cannot, leaves every object as it is. A splitter that dies between
// 2 and 4 leaves O fenced and its split key to expire with its lease. A
// client that keeps meeting the fence with an unchanged map then repairs it
// (RecoverRadosFence): it takes the split key itself (in a transaction that
// checks the map is unchanged, so the dead split can no longer swap it),
// sets O's epoch back to E, removes the dead split's objects, and lets the
// key go.
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/rados_keys.h"
#include "cluster/rados_store_state.h"
#include "cluster/rados_table.h"

namespace strata::cluster {
namespace {

constexpr int64_t kSplitLeaseSeconds = 5;
constexpr size_t kCopyBatchBytes = 8 << 20;
constexpr char kFencePrefix[] = "split-";

std::string SplitKey(std::string_view root, std::string_view name) {
  return std::string(root) + "/rados/tables/" + std::string(name) + "/split";
}

std::string NewObject(const std::string& old_object, const std::string& nonce, char side) {
  return RadosObjectIncarnation(old_object) + ".s" + nonce + side;
}

std::string NewNonce() {
  std::random_device random;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", random(), random());
  return buf;
}

Status RunWrite(const RadosCluster& rados, const std::string& oid, RadosWriteOp* op,
                const std::string& what) {
  RadosCall call;
  call.Start(rados, oid, op);
  const int rc = call.Wait();
  return rc < 0 ? RadosError(rc, what + " " + oid) : Status::OK();
}

void RemoveObject(const RadosCluster& rados, const std::string& oid) {
  RadosWriteOp op;
  op.Remove();
  RunWrite(rados, oid, &op, "removing").PermitUncheckedError();  // absent is fine
}

// Copies every key of fenced object `from` into `left` (keys below
// `split_key`) and `right`, created here with epoch "1". Renews `lease`
// between pages.
Status CopyTablet(EtcdClient* etcd, const RadosCluster& rados, const std::string& from,
                  const std::string& fence, const std::string& split_key, const std::string& left,
                  const std::string& right, int64_t lease, Clock::time_point deadline) {
  bool created[2] = {false, false};
  auto write = [&](int side, const OmapEntries& entries) -> Status {
    RadosWriteOp op;
    if (!created[side]) {
      op.CreateExclusive();
      op.SetXattr(kEpochXattr, "1");
    } else {
      op.AssertExists();
    }
    if (!entries.empty()) op.OmapSet(entries);
    created[side] = true;
    return RunWrite(rados, side == 0 ? left : right, &op, "writing split tablet");
  };
  std::string after;
  auto renewed = Clock::now();
  for (;;) {
    STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(deadline, "splitting " + from));
    RadosReadOp op;
    op.CmpXattr(kEpochXattr, fence);
    const size_t page = op.GetVals(after, "", kOmapPage);
    RadosCall call;
    call.Start(rados, from, &op);
    const int rc = call.Wait();
    if (rc < 0) return RadosError(rc, "reading tablet object " + from + " to split it");
    // Written in batches of at most kCopyBatchBytes: far below the OSD's
    // osd_max_write_size (90 MB), even for a page of 1 MiB values.
    OmapEntries sides[2];
    size_t bytes[2] = {0, 0};
    for (auto& [k, v] : op.page(page).entries) {
      const int side = k < split_key ? 0 : 1;
      bytes[side] += k.size() + v.size();
      sides[side].emplace(k, v);
      if (bytes[side] >= kCopyBatchBytes) {
        STRATA_RETURN_IF_ERROR(write(side, sides[side]));
        sides[side].clear();
        bytes[side] = 0;
      }
    }
    for (int side = 0; side < 2; side++) {
      if (!sides[side].empty() || !created[side]) STRATA_RETURN_IF_ERROR(write(side, sides[side]));
    }
    const OmapPage& p = op.page(page);
    if (!p.more || p.entries.empty()) return Status::OK();
    after = p.entries.back().first;
    if (Clock::now() - renewed > std::chrono::seconds(1)) {
      STRATA_RETURN_IF_ERROR(etcd->KeepAliveOnce(lease).status());
      renewed = Clock::now();
    }
  }
}

// What became of a swap whose reply was lost.
enum class SwapOutcome {
  kSwapped,     // the map names this split's objects
  kNotSwapped,  // the map still names the old object, and the swap can no longer apply
  kReplaced,    // neither: the table was dropped, or other splits replaced both
  kUnknown,     // etcd did not answer in time
};

// Makes a lost swap's outcome known. Taking this split's key away (if it
// still holds it) means the swap, which needs the key, can no longer apply;
// a key already gone means the swap applied or can no longer apply, and the
// map says which. Given a few seconds of its own: the split's deadline may
// be what ran out.
SwapOutcome DecideSwap(EtcdClient* etcd, std::string_view root, const std::string& name,
                       const std::string& split_key, const std::string& nonce,
                       const std::string& old_object) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    Result<TxnResult> taken =
        etcd->Txn({Compare::ValueEquals(split_key, nonce)}, {TxnOp::Delete(split_key)});
    if (taken.ok() && taken->succeeded) return SwapOutcome::kNotSwapped;
    if (taken.ok()) {
      Result<RadosTableInfo> now = LoadRadosTable(etcd, root, name);
      if (now.status().IsNotFound()) return SwapOutcome::kReplaced;
      if (now.ok()) {
        SwapOutcome outcome = SwapOutcome::kReplaced;
        for (const RadosTablet& t : now->tablets) {
          if (t.object == old_object) return SwapOutcome::kNotSwapped;
          if (t.object.find(".s" + nonce) != std::string::npos) outcome = SwapOutcome::kSwapped;
        }
        return outcome;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return SwapOutcome::kUnknown;
}

}  // namespace

Status SplitRadosTabletIn(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                          const std::string& name, const std::string& split_row,
                          Clock::time_point deadline, const std::string& only_object) {
  if (split_row.empty()) return Status::InvalidArgument("a split row must not be empty");
  const std::string map_key = RadosTableKey(root, name);
  const std::string split_key = SplitKey(root, name);
  const std::string nonce = NewNonce();
  RadosTableInfo map;
  size_t index = 0;
  int64_t lease = 0;
  // 1. The split key, on a map that is still the one read.
  for (;;) {
    const std::string what = "splitting RADOS table '" + name + "'";
    STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(deadline, what));
    STRATA_ASSIGN_OR_RETURN(map, LoadRadosTable(etcd, root, name));
    index = map.TabletFor(split_row);
    Status refused;
    if (map.tablets[index].start_row == split_row) {
      refused = Status::InvalidArgument("row '" + split_row + "' already starts a tablet of '" +
                                        name + "'");
    } else if (!only_object.empty() && map.tablets[index].object != only_object) {
      refused = Status::Busy("the tablet of row '" + split_row + "' was split meanwhile");
    }
    if (!refused.ok()) {
      if (lease != 0) etcd->RevokeLease(lease).PermitUncheckedError();
      return refused;
    }
    // A lease kept from an earlier try (waiting for another split) may have
    // run out.
    if (lease != 0 && !etcd->KeepAliveOnce(lease).ok()) lease = 0;
    if (lease == 0) {
      STRATA_ASSIGN_OR_RETURN(auto granted, etcd->GrantLease(kSplitLeaseSeconds));
      lease = granted.first;
    }
    STRATA_ASSIGN_OR_RETURN(
        TxnResult txn,
        etcd->Txn({Compare::Version(split_key, Compare::Op::kEqual, 0),
                   Compare::ModRevision(map_key, Compare::Op::kEqual, map.mod_revision)},
                  {TxnOp::Put(split_key, nonce, lease)}));
    if (txn.succeeded) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // another split: wait for it
  }
  const RadosTablet old = map.tablets[index];
  const std::string fence = kFencePrefix + nonce;
  const std::string left = NewObject(old.object, nonce, 'a');
  const std::string right = NewObject(old.object, nonce, 'b');
  auto release = [&] {
    etcd->Txn({Compare::ValueEquals(split_key, nonce)}, {TxnOp::Delete(split_key)})
        .status()
        .PermitUncheckedError();  // the lease ends it anyway
  };

  // 2. The fence. The map is the one read and no split runs, so an epoch
  // other than the map's is a dead split's fence: take it over.
  Result<std::string> epoch = rados.GetXattr(old.object, kEpochXattr);
  if (!epoch.ok()) {
    release();
    return epoch.status();
  }
  if (*epoch != old.epoch && epoch->rfind(kFencePrefix, 0) != 0) {
    release();
    return Status::Corruption("tablet object " + old.object + " has epoch '" + *epoch +
                              "', its map says '" + old.epoch + "'");
  }
  if (*epoch != old.epoch) {
    const std::string dead = epoch->substr(sizeof(kFencePrefix) - 1);
    RemoveObject(rados, NewObject(old.object, dead, 'a'));
    RemoveObject(rados, NewObject(old.object, dead, 'b'));
  }
  RadosWriteOp fence_op;
  fence_op.CmpXattr(kEpochXattr, *epoch);
  fence_op.SetXattr(kEpochXattr, fence);
  Status s = RunWrite(rados, old.object, &fence_op, "fencing tablet object");
  if (!s.ok()) {
    release();
    return s;
  }

  // 3. The copy; 4. the swap.
  s = CopyTablet(etcd, rados, old.object, fence, rados_keys::RowPrefix(split_row), left, right,
                 lease, deadline);
  RadosTableInfo next = map;
  next.tablets[index] = RadosTablet{old.start_row, left, "1"};
  next.tablets.insert(next.tablets.begin() + static_cast<ptrdiff_t>(index) + 1,
                      RadosTablet{split_row, right, "1"});
  SwapOutcome outcome = SwapOutcome::kNotSwapped;
  if (s.ok()) {
    Result<TxnResult> txn =
        etcd->Txn({Compare::ValueEquals(split_key, nonce),
                   Compare::ModRevision(map_key, Compare::Op::kEqual, map.mod_revision)},
                  {TxnOp::Put(map_key, next.Encode()), TxnOp::Delete(split_key)});
    if (txn.ok() && txn->succeeded) {
      outcome = SwapOutcome::kSwapped;
    } else if (txn.ok()) {
      s = Status::Aborted("the split of '" + name + "' lost its lease or its map");
    } else {
      s = txn.status();
      outcome = DecideSwap(etcd, root, name, split_key, nonce, old.object);
    }
  }
  switch (outcome) {
    case SwapOutcome::kSwapped:
      break;
    case SwapOutcome::kUnknown:
      // The map may name the new objects: leave everything as it is. The
      // fence stays until a client repairs it (if the map is unchanged).
      return s;
    case SwapOutcome::kReplaced:
      // Not in the map, whatever happened: nothing to unfence; the old
      // object is another split's (or a drop's) to remove.
      RemoveObject(rados, left);
      RemoveObject(rados, right);
      return s;
    case SwapOutcome::kNotSwapped: {
      // This split's own fence, and only it, comes off; its objects go.
      RadosWriteOp unfence;
      unfence.CmpXattr(kEpochXattr, fence);
      unfence.SetXattr(kEpochXattr, old.epoch);
      RunWrite(rados, old.object, &unfence, "unfencing").PermitUncheckedError();
      RemoveObject(rados, left);
      RemoveObject(rados, right);
      release();
      return s;
    }
  }
  // 5. The old object.
  RemoveObject(rados, old.object);
  return Status::OK();
}

namespace {

// Every key of `tablet` when it holds more than `max_keys` (in key order);
// none when it holds no more, or when it was fenced or removed meanwhile
// (*gone).
Status KeysIfOver(const RadosCluster& rados, const RadosTablet& tablet, uint64_t max_keys,
                  Clock::time_point deadline, std::vector<std::string>* keys, bool* gone) {
  keys->clear();
  *gone = false;
  std::string after;
  for (;;) {
    STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(deadline, "counting " + tablet.object));
    RadosReadOp op;
    op.CmpXattr(kEpochXattr, tablet.epoch);
    const size_t page = op.GetKeys(after, kOmapPage);
    RadosCall call;
    call.Start(rados, tablet.object, &op);
    const int rc = call.Wait();
    if (rc == -ECANCELED || rc == -ENOENT) {  // fenced or split meanwhile
      keys->clear();
      *gone = true;
      return Status::OK();
    }
    if (rc < 0) return RadosError(rc, "counting the keys of " + tablet.object);
    OmapPage& p = op.page(page);
    for (auto& [k, v] : p.entries) keys->push_back(std::move(k));
    if (!p.more || p.entries.empty()) break;
    after = keys->back();
  }
  if (keys->size() <= max_keys) keys->clear();
  return Status::OK();
}

// The row of the middle key of `keys` (sorted), or, when that is the
// tablet's first row `start_row`, the next row after it; empty when every
// key is of one row.
std::string MedianRow(const std::vector<std::string>& keys, const std::string& start_row) {
  rados_keys::DecodedKey key;
  for (size_t i = keys.size() / 2; i < keys.size(); i++) {
    if (rados_keys::DecodeKey(keys[i], &key) && key.row > start_row) return key.row;
  }
  return "";
}

}  // namespace

Status SplitTabletIfOver(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                         const std::string& name, const RadosTablet& tablet, uint64_t max_keys,
                         Clock::time_point deadline, TabletCheck* result) {
  *result = TabletCheck::kRaced;
  std::vector<std::string> keys;
  bool gone = false;
  STRATA_RETURN_IF_ERROR(KeysIfOver(rados, tablet, max_keys, deadline, &keys, &gone));
  if (gone) return Status::OK();
  if (keys.empty()) {
    *result = TabletCheck::kUnderLimit;
    return Status::OK();
  }
  const std::string row = MedianRow(keys, tablet.start_row);
  if (row.empty()) {
    *result = TabletCheck::kOneRow;
    return Status::OK();
  }
  Status s = SplitRadosTabletIn(etcd, rados, root, name, row, deadline, tablet.object);
  // Another split made that row a boundary, or split this tablet first.
  if (s.IsInvalidArgument() || s.IsBusy()) return Status::OK();
  STRATA_RETURN_IF_ERROR(s);
  *result = TabletCheck::kSplit;
  return Status::OK();
}

Result<int> SplitLargeRadosTabletsIn(EtcdClient* etcd, const RadosCluster& rados,
                                     std::string_view root, const std::string& name,
                                     uint64_t max_keys, uint64_t timeout_millis) {
  if (max_keys < 2) return Status::InvalidArgument("max_keys must be at least 2");
  int splits = 0;
  std::set<std::string> unsplittable;  // objects looked at and left whole
  // Races (a tablet fenced or split by others) are looked at again, for as
  // long as one call may take.
  const auto race_deadline = Clock::now() + std::chrono::milliseconds(timeout_millis);
  for (bool again = true; again;) {
    again = false;
    STRATA_ASSIGN_OR_RETURN(RadosTableInfo map, LoadRadosTable(etcd, root, name));
    for (size_t i = 0; i < map.tablets.size(); i++) {
      const RadosTablet& tablet = map.tablets[i];
      if (unsplittable.count(tablet.object) != 0) continue;
      const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_millis);
      TabletCheck check;
      STRATA_RETURN_IF_ERROR(
          SplitTabletIfOver(etcd, rados, root, name, tablet, max_keys, deadline, &check));
      if (check == TabletCheck::kUnderLimit || check == TabletCheck::kOneRow) {
        unsplittable.insert(tablet.object);
        continue;
      }
      if (check == TabletCheck::kRaced) {
        STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(
            race_deadline, "splitting RADOS table '" + name + "' (its tablets kept changing)"));
        // A fence a dead split left is repaired here as a client would.
        RecoverRadosFence(etcd, rados, root, name, map, i).PermitUncheckedError();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      } else {
        splits++;
      }
      again = true;  // the halves may be over the limit still; a race: look again
      break;
    }
  }
  return splits;
}

Status RecoverRadosFence(EtcdClient* etcd, const RadosCluster& rados, std::string_view root,
                         const std::string& name, const RadosTableInfo& map, size_t index) {
  // Whatever goes wrong here, the caller only retries its call: a repair
  // that cannot be made now is made by a later one, so nothing but OK is
  // returned.
  const std::string map_key = RadosTableKey(root, name);
  const std::string split_key = SplitKey(root, name);
  const RadosTablet& tablet = map.tablets[index];
  auto fenced = [&]() -> std::optional<std::string> {
    Result<std::string> epoch = rados.GetXattr(tablet.object, kEpochXattr);
    if (!epoch.ok() || *epoch == tablet.epoch || epoch->rfind(kFencePrefix, 0) != 0) {
      return std::nullopt;  // gone (split or dropped: the map will say), or not fenced
    }
    return *epoch;
  };
  if (!fenced().has_value()) return Status::OK();
  // A split still holds its key: it is alive (or its lease not yet over).
  Result<KeyValue> holder = etcd->Get(split_key);
  if (!holder.status().IsNotFound()) return Status::OK();
  // Take the key on this very map: a dead split can no longer swap the map
  // once it is taken, nor can another repair run.
  Result<std::pair<int64_t, int64_t>> lease = etcd->GrantLease(kSplitLeaseSeconds);
  if (!lease.ok()) return Status::OK();
  const std::string mine = "repair-" + NewNonce();
  Result<TxnResult> taken =
      etcd->Txn({Compare::Version(split_key, Compare::Op::kEqual, 0),
                 Compare::ModRevision(map_key, Compare::Op::kEqual, map.mod_revision)},
                {TxnOp::Put(split_key, mine, lease->first)});
  if (taken.ok() && taken->succeeded) {
    // Looked at again under the key: another repair may have come first.
    if (std::optional<std::string> epoch = fenced()) {
      const std::string dead = epoch->substr(sizeof(kFencePrefix) - 1);
      RadosWriteOp unfence;
      unfence.CmpXattr(kEpochXattr, *epoch);
      unfence.SetXattr(kEpochXattr, tablet.epoch);
      RunWrite(rados, tablet.object, &unfence, "repairing the fence of").PermitUncheckedError();
      RemoveObject(rados, NewObject(tablet.object, dead, 'a'));
      RemoveObject(rados, NewObject(tablet.object, dead, 'b'));
    }
  }
  etcd->RevokeLease(lease->first).PermitUncheckedError();  // and the key with it
  return Status::OK();
}

}  // namespace strata::cluster
