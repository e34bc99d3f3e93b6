// Tests of PickGroup: which queued writes a write group takes when they do
// not all fit.
#include "wal/internal/group_picker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/random.h"
#include "util/test_util.h"

namespace strata::wal {
namespace {

std::vector<size_t> Pick(const std::vector<GroupCandidate>& queue, size_t max_bytes) {
  std::vector<size_t> picked;
  PickGroup(queue, max_bytes, &picked);
  return picked;
}

size_t BytesOf(const std::vector<GroupCandidate>& queue, const std::vector<size_t>& picked) {
  size_t n = 0;
  for (size_t i : picked) n += queue[i].bytes;
  return n;
}

TEST(GroupPickerTest, EmptyAndTinyQueues) {
  EXPECT_TRUE(Pick({}, 100).empty());
  EXPECT_EQ(Pick({{500, 1}}, 100), (std::vector<size_t>{0}));
  EXPECT_EQ(Pick({{500, 1}, {500, 2}}, 100), (std::vector<size_t>{0, 1}));
}

TEST(GroupPickerTest, EverythingThatFitsGoesInQueueOrder) {
  const std::vector<GroupCandidate> q = {{10, 1}, {20, 2}, {30, 1}, {40, 3}, {50, 2}};
  EXPECT_EQ(Pick(q, 150), (std::vector<size_t>{0, 1, 2, 3, 4}));
}

// The leader and the writer that waited longest go whatever their size, so
// a write larger than a group is never left behind for good.
TEST(GroupPickerTest, LeaderAndOldestWaiterAlwaysGo) {
  const std::vector<GroupCandidate> q = {{80, 1}, {500, 1}, {10, 2}, {10, 1}};
  EXPECT_EQ(Pick(q, 100), (std::vector<size_t>{0, 1}));
}

// One key's backlog does not keep another key's small write out: the group
// that follows the leader takes the small write although it queued last.
TEST(GroupPickerTest, SmallWriteOfAnotherKeyIsNotStuckBehindABacklog) {
  std::vector<GroupCandidate> q;
  q.push_back({100, 7});                               // the leader, key 7
  for (int i = 0; i < 50; i++) q.push_back({1000, 7});  // key 7's backlog: 50 KB
  q.push_back({100, 9});                               // one small write of key 9, last
  const std::vector<size_t> picked = Pick(q, 4096);
  EXPECT_NE(std::find(picked.begin(), picked.end(), q.size() - 1), picked.end());
  EXPECT_LE(BytesOf(q, picked), 4096u);
  // Key 7 took a prefix of its backlog: the oldest, in order.
  std::vector<size_t> sevens;
  for (size_t i : picked) {
    if (q[i].key == 7) sevens.push_back(i);
  }
  for (size_t j = 0; j < sevens.size(); j++) EXPECT_EQ(sevens[j], j);
}

// Keys take turns, one write each per round, in the order they first queued.
TEST(GroupPickerTest, KeysTakeTurns) {
  const std::vector<GroupCandidate> q = {
      {10, 1}, {10, 1},                    // leader and oldest waiter
      {10, 1}, {10, 1}, {10, 1}, {10, 1},  // key 1's backlog
      {10, 2}, {10, 2},                    // key 2
      {10, 3},                             // key 3
  };
  EXPECT_EQ(Pick(q, 60), (std::vector<size_t>{0, 1, 2, 6, 8, 3}));
}

// A key whose next write does not fit is done for this group, even if a
// smaller write of it comes later; other keys still fill the room.
TEST(GroupPickerTest, AKeyTakesAPrefixOfItsWrites) {
  const std::vector<GroupCandidate> q = {
      {10, 0}, {10, 0},  // leader and oldest waiter
      {70, 1}, {5, 1},   // key 1: 70 does not fit in the 50 left
      {20, 2}, {20, 2}, {20, 2},
  };
  EXPECT_EQ(Pick(q, 70), (std::vector<size_t>{0, 1, 4, 5}));
}

// Against random queues: indexes are distinct and valid, the first two always
// go, the bound holds beyond them, every key takes a prefix of its writes,
// and the group is full: every key's next write would overflow it.
TEST(GroupPickerTest, RandomQueuesKeepTheRules) {
  Random rnd(test::TestSeed());
  for (int round = 0; round < 2000; round++) {
    std::vector<GroupCandidate> q(rnd.Uniform(40));
    for (auto& c : q) c = GroupCandidate{rnd.Skewed(12), rnd.Uniform(4)};
    const size_t max_bytes = 1 + rnd.Uniform(8192);
    const std::vector<size_t> picked = Pick(q, max_bytes);
    std::vector<bool> taken(q.size(), false);
    for (size_t i : picked) {
      ASSERT_LT(i, q.size());
      ASSERT_FALSE(taken[i]) << "index " << i << " twice";
      taken[i] = true;
    }
    for (size_t i = 0; i < std::min<size_t>(2, q.size()); i++) ASSERT_TRUE(taken[i]);
    size_t head = 0;
    for (size_t i = 0; i < std::min<size_t>(2, q.size()); i++) head += q[i].bytes;
    const size_t total = BytesOf(q, picked);
    ASSERT_LE(total, std::max(head, max_bytes));
    std::map<uint64_t, bool> key_stopped;  // a key skipped one of its writes
    std::map<uint64_t, size_t> first_left;  // per key: its first write left behind
    for (size_t i = 2; i < q.size(); i++) {
      if (!taken[i]) {
        key_stopped[q[i].key] = true;
        if (first_left.count(q[i].key) == 0) first_left[q[i].key] = i;
      } else {
        ASSERT_FALSE(key_stopped[q[i].key]) << "key " << q[i].key << " skipped a write";
      }
    }
    for (const auto& [key, i] : first_left) {
      ASSERT_GT(total + q[i].bytes, max_bytes) << "room was left for write " << i;
    }
  }
}

}  // namespace
}  // namespace strata::wal
