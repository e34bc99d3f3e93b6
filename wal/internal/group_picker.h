// PickGroup: which queued log writes the next write group takes, when they do
// not all fit in one group (wal/README.md, "Forming a group").
//
// The group is bounded by bytes, so that no writer waits behind a huge group;
// within the bound, writers of different keys (the engine passes the tenant)
// take turns, so that one key's backlog cannot keep another key's small write
// out of group after group. Queue order between writers of different keys is
// not a promise (concurrent writes have no order); within a key a group takes
// a prefix of that key's queued writes.
//
// A pure function: thread-compatible, no state.
#ifndef STRATA_WAL_INTERNAL_GROUP_PICKER_H_
#define STRATA_WAL_INTERNAL_GROUP_PICKER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::wal {

struct GroupCandidate {
  size_t bytes = 0;   // what the write adds to the group
  uint64_t key = 0;   // WriteRequest::fairness_key
};  // Intentionally copyable.

// Picks the next group from `queue` (oldest first; queue[0] is the leader)
// and sets *picked to the indexes of its members in group order:
//   1. the leader, and the oldest waiter after it, whatever their size (so
//      every group takes the writer that has waited longest: nobody waits
//      forever, and a group may pass max_bytes by these two alone);
//   2. then, round by round, each key in the order its first write queued
//      offers its oldest write not yet taken; it joins when the group stays
//      within max_bytes, and otherwise that key is done for this group.
// When everything fits this is queue order.
void PickGroup(const std::vector<GroupCandidate>& queue, size_t max_bytes,
               std::vector<size_t>* picked);

}  // namespace strata::wal

#endif  // STRATA_WAL_INTERNAL_GROUP_PICKER_H_
