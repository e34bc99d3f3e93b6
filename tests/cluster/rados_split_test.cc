// Tablet splits of RADOS tables (SplitRadosTablet): rows move, stores
// holding the old map follow the new one, writers running through splits
// lose nothing, and a fence a dead splitter left is repaired, never one a
// live split holds. On the cluster the binary shares (shared_ceph.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/local_ceph.h"
#include "cluster/rados_io.h"
#include "cluster/rados_table.h"
#include "common/random.h"
#include "strata/rados.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::cluster {
namespace {

TableSchema OneFamily() {
  TableSchema s;
  s.families.push_back({.name = "f"});
  return s;
}

std::string RowName(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "r%03d", i);
  return buf;
}

class RadosSplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = SharedCeph()->Options();
    name_ = std::string("split_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_OK(CreateRadosTable(options_, name_, OneFamily()));
    EtcdOptions eo;
    eo.endpoints = options_.etcd_endpoints;
    auto etcd = EtcdClient::Open(eo);
    ASSERT_OK(etcd);
    etcd_ = std::move(etcd).value();
    auto rados = RadosCluster::Connect(options_.ceph_conf, options_.ceph_user, options_.pool,
                                       options_.timeout_millis);
    ASSERT_OK(rados);
    rados_ = *rados;
  }

  std::unique_ptr<RowStore> Open() {
    auto store = OpenRadosRowStore(options_, name_);
    EXPECT_OK(store);
    return store.ok() ? std::move(store).value() : nullptr;
  }
  RadosTableInfo Map() {
    auto map = LoadRadosTable(etcd_.get(), options_.root, name_);
    EXPECT_OK(map);
    return map.ok() ? *map : RadosTableInfo();
  }
  // The value of row's f:q at timestamp 1, or the error in parentheses.
  static std::string Value(const RowStore& store, const std::string& row) {
    RowFilter filter;
    filter.columns = {{"f", "q"}};
    auto cells = store.ReadRow(ReadOptions(), row, filter);
    if (!cells.ok()) return "(" + cells.status().ToString() + ")";
    return cells->empty() ? "(none)" : cells->front().value;
  }

  RadosOptions options_;
  std::string name_;
  std::unique_ptr<EtcdClient> etcd_;
  std::shared_ptr<RadosCluster> rados_;
};

TEST_F(RadosSplitTest, RowsMoveAndAStoreWithTheOldMapFollowsTheNewOne) {
  auto writer = Open();
  ASSERT_NE(writer, nullptr);
  std::vector<ConditionalMutation> batch;
  for (int i = 0; i < 200; i++) {
    ConditionalMutation m;
    m.row = RowName(i);
    m.mutation.Put("f", "q", 1, m.row);
    batch.push_back(std::move(m));
  }
  ASSERT_OK(writer->CheckAndMutateBatch(WriteOptions(), batch));
  auto stale = Open();  // holds the map of one tablet
  ASSERT_NE(stale, nullptr);
  const std::string first_object = Map().tablets[0].object;

  ASSERT_OK(SplitRadosTablet(options_, name_, RowName(100)));
  ASSERT_OK(SplitRadosTablet(options_, name_, RowName(50)));
  const RadosTableInfo map = Map();
  ASSERT_EQ(map.tablets.size(), 3u);
  EXPECT_EQ(map.tablets[1].start_row, RowName(50));
  EXPECT_EQ(map.tablets[2].start_row, RowName(100));
  // The replaced object is gone.
  EXPECT_TRUE(rados_->GetXattr(first_object, kEpochXattr).status().IsNotFound());

  EXPECT_TRUE(SplitRadosTablet(options_, name_, RowName(100)).IsInvalidArgument());
  EXPECT_TRUE(SplitRadosTablet(options_, name_, "").IsInvalidArgument());
  EXPECT_TRUE(SplitRadosTablet(options_, "never-made", "r").IsNotFound());

  // The stale store reads and writes every tablet right.
  EXPECT_EQ(Value(*stale, RowName(150)), RowName(150));
  EXPECT_EQ(Value(*stale, RowName(10)), RowName(10));
  RowMutation m;
  m.Put("f", "q", 1, "changed");
  auto cas = stale->CheckAndMutate(WriteOptions(), RowName(120),
                                   {Condition::ValueEquals("f", "q", 1, RowName(120))}, m);
  ASSERT_OK(cas);
  EXPECT_TRUE(cas->applied);
  ASSERT_OK(stale->Mutate(WriteOptions(), RowName(60), m));
  auto scan = stale->Scan(ReadOptions(), ScanSpec());
  ASSERT_OK(scan);
  int rows = 0;
  for (; (*scan)->Valid(); (*scan)->Next()) {
    EXPECT_EQ((*scan)->row(), RowName(rows));
    rows++;
  }
  EXPECT_EQ(rows, 200);
  auto fresh = Open();
  EXPECT_EQ(Value(*fresh, RowName(120)), "changed");
  EXPECT_EQ(Value(*fresh, RowName(60)), "changed");
  EXPECT_EQ(Value(*fresh, RowName(49)), RowName(49));
  EXPECT_EQ(Value(*fresh, RowName(199)), RowName(199));
}

// Tablets over a key count split at their middle row until none is over
// it; a tablet of one row stays whole.
TEST_F(RadosSplitTest, LargeTabletsSplitUntilNoneIsOverTheLimit) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<ConditionalMutation> batch;
  for (int i = 0; i < 600; i++) {  // a cell and a version key each: 1200 keys
    ConditionalMutation m;
    m.row = RowName(i);
    m.mutation.Put("f", "q", 1, m.row);
    batch.push_back(std::move(m));
  }
  ASSERT_OK(store->CheckAndMutateBatch(WriteOptions(), batch));
  EXPECT_TRUE(SplitLargeRadosTablets(options_, name_, 1).status().IsInvalidArgument());
  auto splits = SplitLargeRadosTablets(options_, name_, 300);
  ASSERT_OK(splits);
  const RadosTableInfo map = Map();
  EXPECT_EQ(map.tablets.size(), static_cast<size_t>(*splits + 1));
  EXPECT_GE(map.tablets.size(), 4u);
  // Every tablet at or below the limit: 2 keys a row.
  for (size_t i = 0; i < map.tablets.size(); i++) {
    const int first = i == 0 ? 0 : std::stoi(map.tablets[i].start_row.substr(1));
    const int end = i + 1 == map.tablets.size() ? 600 : std::stoi(map.TabletEnd(i).substr(1));
    EXPECT_LE(2 * (end - first), 300) << "tablet " << i;
  }
  for (int i = 0; i < 600; i += 37) EXPECT_EQ(Value(*store, RowName(i)), RowName(i));
  EXPECT_EQ(*SplitLargeRadosTablets(options_, name_, 300), 0);

  // One row of 400 cells: over the limit, but not splittable.
  RowMutation big;
  for (int q = 0; q < 400; q++) big.Put("f", "c" + std::to_string(q), 1, "x");
  ASSERT_OK(store->Mutate(WriteOptions(), "zzz", big));
  auto more = SplitLargeRadosTablets(options_, name_, 300);
  ASSERT_OK(more);
  const RadosTableInfo after = Map();
  EXPECT_EQ(after.tablets.size(), map.tablets.size() + static_cast<size_t>(*more));
  EXPECT_EQ(after.tablets.back().start_row, "zzz");  // cut off from the rows before it
}

// A store splits the tablets it writes to once they are over
// RadosOptions::split_keys, in the background, while it goes on writing.
TEST_F(RadosSplitTest, AStoreSplitsTabletsItFillsOnItsOwn) {
  RadosOptions o = options_;
  o.split_keys = 200;  // counted every 50 writes to a tablet
  auto store = OpenRadosRowStore(o, name_);
  ASSERT_OK(store);
  for (int i = 0; i < 600; i++) {  // 1200 keys in all
    RowMutation m;
    m.Put("f", "q", 1, RowName(i));
    ASSERT_OK((*store)->Mutate(WriteOptions(), RowName(i), m));
  }
  // The checks run behind the writes, and only writes start them: rewrite
  // the rows until they have caught up.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; Map().tablets.size() < 4 && std::chrono::steady_clock::now() < give_up; i++) {
    RowMutation m;
    m.Put("f", "q", 1, RowName(i % 600));
    ASSERT_OK((*store)->Mutate(WriteOptions(), RowName(i % 600), m));
  }
  EXPECT_GE(Map().tablets.size(), 4u);
  for (int i = 0; i < 600; i++) {
    ASSERT_EQ(Value(**store, RowName(i)), RowName(i));
  }
  // A store with split_keys 0 never splits.
  RadosOptions never = options_;
  never.split_keys = 0;
  const std::string other = name_ + "_never";
  ASSERT_OK(CreateRadosTable(never, other, OneFamily()));
  auto quiet = OpenRadosRowStore(never, other);
  ASSERT_OK(quiet);
  for (int i = 0; i < 300; i++) {
    RowMutation m;
    m.Put("f", "q", 1, "v");
    ASSERT_OK((*quiet)->Mutate(WriteOptions(), RowName(i), m));
  }
  auto other_map = LoadRadosTable(etcd_.get(), options_.root, other);
  ASSERT_OK(other_map);
  EXPECT_EQ(other_map->tablets.size(), 1u);
}

// A tablet of large values is copied in batches each far below the OSD's
// largest write.
TEST_F(RadosSplitTest, ATabletOfLargeValuesSplits) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string big((1 << 20) - 8, 'v');
  for (int i = 0; i < 24; i++) {
    RowMutation m;
    m.Put("f", "q", 1, big + std::to_string(i));
    ASSERT_OK(store->Mutate(WriteOptions(), RowName(i), m));
  }
  ASSERT_OK(SplitRadosTablet(options_, name_, RowName(20)));
  ASSERT_OK(SplitRadosTablet(options_, name_, RowName(4)));
  EXPECT_EQ(Map().tablets.size(), 3u);
  for (int i = 0; i < 24; i++) EXPECT_EQ(Value(*store, RowName(i)), big + std::to_string(i));
}

// Writers count up per-row counters with compare-and-sets while tablets
// split under them: every increment that returned applied is there, and no
// other.
TEST_F(RadosSplitTest, CompareAndSetsThroughSplitsLoseNothing) {
  constexpr int kRows = 64;
  constexpr int kThreads = 6;
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < kRows; i++) {
    RowMutation m;
    m.Put("f", "q", 1, "0");
    ASSERT_OK(store->Mutate(WriteOptions(), RowName(i), m));
  }
  std::vector<std::atomic<int>> applied(kRows);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      auto mine = Open();  // each writer with a map of its own
      if (mine == nullptr) return;
      Random rnd(test::TestSeed() + t);
      while (!stop) {
        const int i = static_cast<int>(rnd.Uniform(kRows));
        const std::string seen = Value(*mine, RowName(i));
        if (seen.empty() || seen[0] == '(') {
          errors++;
          continue;
        }
        RowMutation m;
        m.Put("f", "q", 1, std::to_string(std::stoi(seen) + 1));
        auto r = mine->CheckAndMutate(WriteOptions(), RowName(i),
                                      {Condition::ValueEquals("f", "q", 1, seen)}, m);
        if (!r.ok()) {
          errors++;
        } else if (r->applied) {
          applied[i]++;
        }
      }
    });
  }
  // Splits at every eighth row, one after another, while they write.
  int splits = 0;
  for (int i = 8; i < kRows; i += 8) {
    std::this_thread::sleep_for(std::chrono::milliseconds(test::UnderSanitizer() ? 150 : 60));
    const Status split = SplitRadosTablet(options_, name_, RowName(i));
    if (!split.ok()) {
      ADD_FAILURE() << "split at " << RowName(i) << ": " << split.ToString();
      break;  // the writers are stopped and joined below
    }
    splits++;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(Map().tablets.size(), static_cast<size_t>(splits + 1));
  auto fresh = Open();
  int total = 0;
  for (int i = 0; i < kRows; i++) {
    EXPECT_EQ(Value(*fresh, RowName(i)), std::to_string(applied[i].load())) << RowName(i);
    total += applied[i].load();
  }
  EXPECT_GT(total, 0);
  std::printf("%d splits under %d writers: %d increments\n", splits, kThreads, total);
}

// A tablet fenced by a split that died (its split key gone with its lease)
// is repaired by the next client that needs it; one fenced by a split that
// still holds its key is not.
TEST_F(RadosSplitTest, ADeadSplitsFenceIsRepairedAndALiveOnesIsNot) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  RowMutation m;
  m.Put("f", "q", 1, "v");
  ASSERT_OK(store->Mutate(WriteOptions(), "row", m));
  const RadosTablet tablet = Map().tablets[0];
  const std::string dead_left = RadosObjectIncarnation(tablet.object) + ".s00000000deadbeefa";
  {
    // The dead split's fence, and the half-made object it left.
    RadosWriteOp fence;
    fence.SetXattr(kEpochXattr, "split-00000000deadbeef");
    RadosCall call;
    call.Start(*rados_, tablet.object, &fence);
    ASSERT_EQ(call.Wait(), 0);
    RadosWriteOp orphan;
    orphan.CreateExclusive();
    RadosCall make;
    make.Start(*rados_, dead_left, &orphan);
    ASSERT_EQ(make.Wait(), 0);
  }

  // A live split: its key held on a lease. Reads wait and time out.
  const std::string split_key = options_.root + "/rados/tables/" + name_ + "/split";
  auto lease = etcd_->GrantLease(30);
  ASSERT_OK(lease);
  ASSERT_OK(etcd_->Put(split_key, "live", lease->first).status());
  RadosOptions short_calls = options_;
  short_calls.timeout_millis = 1000;
  auto impatient = OpenRadosRowStore(short_calls, name_);
  ASSERT_OK(impatient);
  EXPECT_TRUE((*impatient)->ReadRow(ReadOptions(), "row", RowFilter()).status().IsTimedOut());
  EXPECT_EQ(*rados_->GetXattr(tablet.object, kEpochXattr), "split-00000000deadbeef");

  // The split dies: its key goes with its lease. The next reads (two
  // clients at once: both may try to repair) repair the fence, remove what
  // the dead split left, and answer.
  ASSERT_OK(etcd_->RevokeLease(lease->first));
  auto other = Open();
  ASSERT_NE(other, nullptr);
  std::string other_value;
  std::thread racer([&] { other_value = Value(*other, "row"); });
  EXPECT_EQ(Value(*store, "row"), "v");
  racer.join();
  EXPECT_EQ(other_value, "v");
  EXPECT_EQ(*rados_->GetXattr(tablet.object, kEpochXattr), tablet.epoch);
  EXPECT_TRUE(rados_->GetXattr(dead_left, kEpochXattr).status().IsNotFound());
  ASSERT_OK(store->Mutate(WriteOptions(), "row2", m));
  // And the tablet splits as any other.
  ASSERT_OK(SplitRadosTablet(options_, name_, "row2"));
  EXPECT_EQ(Value(*store, "row2"), "v");
}

}  // namespace
}  // namespace strata::cluster
