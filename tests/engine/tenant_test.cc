// Tenants and their budgets through the public API: options through reopen,
// memtable shares (early flushes and stalls of the over-share tenant only),
// level-0 backpressure and the memtable stop (of the tenants causing them
// only), disk quotas, write rate limits, per-tenant stats, and isolation
// between tenants. Correctness only: rate limits are checked by the waits
// they count, never by elapsed time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/manifest.h"
#include "strata/engine.h"
#include "util/forwarding_fs.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

TableSchema OneFamily() {
  TableSchema s;
  s.families.push_back({.name = "f"});
  return s;
}

TableSchema TwoGroups() {
  TableSchema s;
  s.locality_groups.push_back({.name = "small"});
  s.locality_groups.push_back({.name = "big"});
  s.families.push_back({.name = "a", .locality_group = "small"});
  s.families.push_back({.name = "b", .locality_group = "big"});
  return s;
}

RowMutation PutOf(const std::string& value, const std::string& family = "f") {
  RowMutation m;
  m.Put(family, "q", 1, value);
  return m;
}

// Every row of a table with every cell, as "row/family:qualifier@ts=value".
std::vector<std::string> Dump(const Table& table) {
  std::vector<std::string> out;
  auto it = table.Scan(ReadOptions(), ScanSpec());
  EXPECT_OK(it);
  if (!it.ok()) return out;
  for (; (*it)->Valid(); (*it)->Next()) {
    for (const Cell& c : (*it)->cells()) {
      out.push_back(std::string((*it)->row()) + "/" + c.family + ":" + c.qualifier + "@" +
                    std::to_string(c.timestamp) + "=" + c.value);
    }
  }
  EXPECT_OK((*it)->status());
  return out;
}

TenantStats StatsOf(const Tenant& t) {
  Result<TenantStats> s = t.GetStats();
  EXPECT_OK(s);
  return s.ok() ? *s : TenantStats();
}

// Polls `done` every millisecond for up to a minute; a correctness bound for
// background work, not a timing assertion.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 60000; i++) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A file system whose SSTable creations wait while blocked, so flushes
// fall behind on demand; and whose SSTable opens for reading wait while
// reads are blocked, so compactions (which read their inputs) stall while
// flushes go on.
class BlockingTableFs : public test::ForwardingFileSystem {
 public:
  void Block() { Set(&blocked_, true); }
  void Unblock() { Set(&blocked_, false); }
  void BlockReads() { Set(&reads_blocked_, true); }
  void UnblockReads() { Set(&reads_blocked_, false); }

  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* result) override {
    if (IsTable(path)) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return !reads_blocked_; });
    }
    return ForwardingFileSystem::NewRandomAccessFile(path, result);
  }

 protected:
  std::unique_ptr<WritableFile> WrapWritable(const std::string& path,
                                             std::unique_ptr<WritableFile> file) override {
    if (IsTable(path)) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return !blocked_; });
    }
    return file;
  }

 private:
  static bool IsTable(const std::string& path) {
    return path.size() > 4 && path.compare(path.size() - 4, 4, ".sst") == 0;
  }
  // Sets *flag; clearing it wakes the waiting calls.
  void Set(bool* flag, bool on) {
    std::lock_guard<std::mutex> l(mu_);
    *flag = on;
    if (!on) cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false;
  bool reads_blocked_ = false;
};

class TenantTest : public ::testing::Test {
 protected:
  // Whatever a failed check left blocked, so that closing the engine cannot
  // hang.
  void TearDown() override {
    blocking_fs_.Unblock();
    blocking_fs_.UnblockReads();
  }
  void Open() {
    engine_.reset();
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
  }
  void Reopen() {
    ASSERT_OK(engine_->Close());
    Open();
  }
  Tenant TenantOf(const std::string& name) {
    auto t = engine_->OpenTenant(name);
    EXPECT_OK(t);
    return t.ok() ? *t : Tenant();
  }
  Table TableOf(const std::string& tenant, const std::string& name) {
    auto t = TenantOf(tenant).OpenTable(name);
    EXPECT_OK(t);
    return t.ok() ? *t : Table();
  }

  // Tenants "a" and "b", each with a table "t" of OneFamily().
  void CreateTenantsAAndB() {
    for (const char* tenant : {"a", "b"}) {
      ASSERT_OK(engine_->CreateTenant(tenant));
      ASSERT_OK(TenantOf(tenant).CreateTable("t", OneFamily()));
    }
  }
  // Opens the engine on blocking_fs_ with level-0 triggers 1 (compaction)
  // and 2 (slowdown and stop).
  void OpenWithLevelZeroStopAtTwo() {
    options_.file_system = &blocking_fs_;
    options_.level0_compaction_trigger = 1;
    options_.level0_slowdown_trigger = 2;
    options_.level0_stop_trigger = 2;
    Open();
  }
  // Brings the level 0 of `at` (tenant a's) to the stop trigger while its
  // compaction stalls (reads stay blocked until the test or TearDown
  // unblocks them). REQUIRES: OpenWithLevelZeroStopAtTwo. a's first file
  // goes to level 1. Then reads of new files block: the second file
  // overlaps the first, so its compaction must read it and stalls; the
  // third joins it on level 0, which then holds a's stop trigger.
  void StallLevelZero(Table& at) {
    auto fill = [&](int round) {
      for (int i = 0; i < 10; i++) {
        ASSERT_OK(
            at.Mutate(WriteOptions(), "r" + std::to_string(i), PutOf("v" + std::to_string(round))));
      }
      ASSERT_OK(engine_->Flush());
    };
    fill(0);
    ASSERT_TRUE(Eventually([&] {
      const EngineStats st = engine_->GetStats();
      return st.max_level0_files == 0 && st.compactions + st.trivial_moves == 1;
    }));
    blocking_fs_.BlockReads();
    fill(1);
    fill(2);
    ASSERT_TRUE(Eventually([&] { return engine_->GetStats().max_level0_files == 2; }));
  }

  // Starts dropping tenant `tenant`'s table `table` on a thread (to be
  // joined later) and expects the drop to end while a call (`held` says
  // which) waits for another tenant's background work: the drop takes the
  // engine's gate exclusively, so a waiting call must not keep the gate
  // (once a drop waits for the gate, every later call waits behind it). If
  // it does not end, `unblock` lets the held call go, so that the test
  // fails instead of hanging.
  std::thread ExpectDropNotHeld(const std::string& tenant, const std::string& table,
                                const std::string& held, const std::function<void()>& unblock) {
    auto dropped = std::make_shared<std::atomic<bool>>(false);
    std::thread dropper([this, tenant, table, dropped] {
      EXPECT_OK(TenantOf(tenant).DropTable(table));
      dropped->store(true);
    });
    if (!Eventually([&] { return dropped->load(); })) {
      ADD_FAILURE() << "a drop in tenant " << tenant << " waited for " << held;
      unblock();
    }
    return dropper;
  }

  // Tenant a's writes are about to stop on backpressure: a write of
  // `a_value` to a's row "late" waits until `stops()` is 1, and then stays
  // held while a table of tenant b is dropped and b writes 20 rows of
  // `b_value` through (`held_for` names what holds a). `while_held` checks
  // more before `unblock()` lets a go; both writes then land.
  void ExpectOnlyTenantAHeld(Table& at, Table& bt, const std::string& a_value,
                             const std::string& b_value, const std::function<uint64_t()>& stops,
                             const char* held_for, const std::function<void()>& while_held,
                             const std::function<void()>& unblock) {
    ASSERT_OK(TenantOf("b").CreateTable("spare", OneFamily()));
    std::atomic<bool> a_done{false}, b_done{false};
    Status a_write;
    std::thread a_writer([&] {
      a_write = at.Mutate(WriteOptions(), "late", PutOf(a_value));
      a_done.store(true);
    });
    EXPECT_TRUE(Eventually([&] { return stops() == 1; }));
    std::thread dropper =
        ExpectDropNotHeld("b", "spare", std::string("the write held by ") + held_for, unblock);
    std::thread b_writer([&] {
      for (int j = 0; j < 20; j++) {
        EXPECT_OK(bt.Mutate(WriteOptions(), "r" + std::to_string(j), PutOf(b_value)));
      }
      b_done.store(true);
    });
    EXPECT_TRUE(Eventually([&] { return b_done.load(); })) << "tenant b was held by " << held_for;
    EXPECT_FALSE(a_done.load());  // a's background work cannot finish while blocked
    EXPECT_EQ(stops(), 1u);
    while_held();

    unblock();
    a_writer.join();
    dropper.join();
    b_writer.join();
    ASSERT_OK(a_write);
    EXPECT_EQ(at.ReadRow(ReadOptions(), "late")->size(), 1u);
    EXPECT_EQ(bt.ReadRow(ReadOptions(), "r19")->size(), 1u);
  }

  ScratchDir dir_{"tenant"};
  BlockingTableFs blocking_fs_;  // outlives engine_
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

// ----------------------------------------------------------------------------
// Options

TEST_F(TenantTest, OptionsRoundTripThroughReopen) {
  Open();
  TenantOptions a;
  a.write_buffer_weight = 3;
  a.write_rate_limit = 5 << 20;
  a.disk_quota = 1ull << 30;
  ASSERT_OK(engine_->CreateTenant("a", a));
  ASSERT_OK(engine_->CreateTenant("b"));
  ASSERT_OK(engine_->CreateTenant("c"));
  TenantOptions c;
  c.disk_quota = 12345;
  ASSERT_OK(engine_->SetTenantOptions("c", c));
  Reopen();
  EXPECT_EQ(*engine_->GetTenantOptions("a"), a);
  EXPECT_EQ(*engine_->GetTenantOptions("b"), TenantOptions());
  EXPECT_EQ(*engine_->GetTenantOptions("c"), c);

  // A change back to the defaults, and one after the reopen's snapshot.
  ASSERT_OK(engine_->SetTenantOptions("a", TenantOptions()));
  c.write_buffer_weight = 7;
  ASSERT_OK(engine_->SetTenantOptions("c", c));
  Reopen();
  EXPECT_EQ(*engine_->GetTenantOptions("a"), TenantOptions());
  EXPECT_EQ(*engine_->GetTenantOptions("c"), c);

  // Shares follow the weights: 1 (a) + 1 (b) + 7 (c) of the total.
  const uint64_t total = options_.total_write_buffer_size;
  EXPECT_EQ(StatsOf(TenantOf("a")).memtable_share, total / 9);
  EXPECT_EQ(StatsOf(TenantOf("c")).memtable_share, total / 9 * 7 + total % 9 * 7 / 9);

  // A dropped tenant's options go with it; a new tenant of that name starts
  // with the defaults.
  ASSERT_OK(engine_->DropTenant("c"));
  ASSERT_OK(engine_->CreateTenant("c"));
  Reopen();
  EXPECT_EQ(*engine_->GetTenantOptions("c"), TenantOptions());
}

TEST_F(TenantTest, BadOptionsAreRejected) {
  Open();
  TenantOptions bad;
  bad.write_buffer_weight = 0;
  EXPECT_TRUE(engine_->CreateTenant("a", bad).IsInvalidArgument());
  EXPECT_TRUE(engine_->OpenTenant("a").status().IsNotFound());
  bad.write_buffer_weight = 10001;
  EXPECT_TRUE(engine_->CreateTenant("a", bad).IsInvalidArgument());
  ASSERT_OK(engine_->CreateTenant("a"));
  EXPECT_TRUE(engine_->SetTenantOptions("a", bad).IsInvalidArgument());
  EXPECT_EQ(*engine_->GetTenantOptions("a"), TenantOptions());
  EXPECT_TRUE(engine_->SetTenantOptions("nobody", TenantOptions()).IsNotFound());
  EXPECT_TRUE(engine_->GetTenantOptions("nobody").status().IsNotFound());

  options_.total_write_buffer_size = 100;
  ASSERT_OK(engine_->Close());
  EXPECT_TRUE(Engine::Open(dir_.path(), options_).status().IsInvalidArgument());
}

TEST(TenantManifestTest, TenantOptionsEncodeAndApply) {
  using engine::Catalog;
  using engine::VersionEdit;
  VersionEdit create;
  create.tenants.push_back({.id = 1, .name = "a"});
  TenantOptions o;
  o.write_buffer_weight = 2;
  o.write_rate_limit = 1000;
  o.disk_quota = 1 << 20;
  create.tenant_options.push_back({1, o});
  std::string encoded;
  create.EncodeTo(&encoded);
  VersionEdit decoded;
  ASSERT_OK(decoded.DecodeFrom(encoded));
  ASSERT_EQ(decoded.tenant_options.size(), 1u);
  EXPECT_EQ(decoded.tenant_options[0].tenant_id, 1u);
  EXPECT_EQ(decoded.tenant_options[0].options, o);

  Catalog catalog;
  ASSERT_OK(catalog.Apply(decoded));
  EXPECT_EQ(catalog.tenant_options.at(1), o);
  VersionEdit snapshot = catalog.Snapshot();
  ASSERT_EQ(snapshot.tenant_options.size(), 1u);

  // Options of an unknown tenant contradict the catalog.
  VersionEdit stray;
  stray.tenant_options.push_back({9, o});
  EXPECT_TRUE(catalog.Apply(stray).IsCorruption());

  // Back to the defaults: snapshots leave the tag out, as before tenant
  // options existed.
  VersionEdit reset;
  reset.tenant_options.push_back({1, TenantOptions()});
  ASSERT_OK(catalog.Apply(reset));
  EXPECT_TRUE(catalog.Snapshot().tenant_options.empty());

  // The worked example of engine/MANIFEST.md.
  VersionEdit example;
  TenantOptions e;
  e.write_buffer_weight = 2;
  e.disk_quota = 1 << 20;
  example.tenant_options.push_back({1, e});
  std::string bytes;
  example.EncodeTo(&bytes);
  EXPECT_EQ(bytes, std::string("\x0d\x01\x06\x01\x02\x00\x80\x80\x40", 9));

  // A truncated body is Corruption.
  encoded.pop_back();
  EXPECT_TRUE(decoded.DecodeFrom(encoded).IsCorruption());

  // So is a weight CreateTenant would refuse (0 here), checksummed or not.
  std::string zero_weight = bytes;
  ASSERT_EQ(zero_weight[4], '\x02');  // the weight, after tag, id, length, version
  zero_weight[4] = '\0';
  EXPECT_TRUE(decoded.DecodeFrom(zero_weight).IsCorruption());
}

// ----------------------------------------------------------------------------
// Memtable shares

TEST_F(TenantTest, ShareTriggersEarlyFlushOfTheOverShareTenantOnly) {
  options_.total_write_buffer_size = 256 << 10;  // two tenants: 128 KiB each
  options_.write_buffer_size = 8 << 20;          // never full on its own here
  Open();
  ASSERT_OK(engine_->CreateTenant("a"));
  ASSERT_OK(engine_->CreateTenant("b"));
  ASSERT_OK(TenantOf("a").CreateTable("t", TwoGroups()));
  ASSERT_OK(TenantOf("a").CreateTable("u", OneFamily()));
  ASSERT_OK(TenantOf("b").CreateTable("t", OneFamily()));
  Table at = TableOf("a", "t"), au = TableOf("a", "u"), bt = TableOf("b", "t");
  const std::string value(1000, 'v');
  // Tenant a: ~300 KB over two tables and two groups; b: ~40 KB.
  for (int i = 0; i < 100; i++) {
    const std::string row = "r" + std::to_string(i);
    ASSERT_OK(at.Mutate(WriteOptions(), row, PutOf(value, "a")));
    ASSERT_OK(at.Mutate(WriteOptions(), row, PutOf(value, "b")));
    ASSERT_OK(au.Mutate(WriteOptions(), row, PutOf(value)));
    if (i < 40) {
      ASSERT_OK(bt.Mutate(WriteOptions(), row, PutOf(value)));
    }
  }
  Tenant a = TenantOf("a"), b = TenantOf("b");
  ASSERT_TRUE(Eventually([&] { return StatsOf(a).immutable_memtable_bytes == 0; }));
  const TenantStats sa = StatsOf(a), sb = StatsOf(b);
  EXPECT_EQ(sa.memtable_share, 128u << 10);
  EXPECT_GE(sa.early_flushes, 2u);
  EXPECT_GT(sa.sstable_bytes, 0u);
  EXPECT_LE(sa.memtable_bytes, sa.memtable_share);
  EXPECT_EQ(sb.early_flushes, 0u);
  EXPECT_EQ(sb.sstable_bytes, 0u);
  EXPECT_GT(sb.memtable_bytes, 30u << 10);
  EXPECT_EQ(sb.memtable_stalls, 0u);
  EXPECT_EQ(engine_->GetStats().flushes, sa.early_flushes);

  // Everything is still there, flushed or not.
  for (int i = 0; i < 100; i++) {
    const std::string row = "r" + std::to_string(i);
    ASSERT_EQ(at.ReadRow(ReadOptions(), row)->size(), 2u) << row;
    ASSERT_EQ(au.ReadRow(ReadOptions(), row)->size(), 1u) << row;
    ASSERT_EQ(bt.ReadRow(ReadOptions(), row)->size(), i < 40 ? 1u : 0u) << row;
  }
}

TEST_F(TenantTest, TenantWhoseFlushesFallBehindWaitsAlone) {
  BlockingTableFs& fs = blocking_fs_;
  options_.file_system = &fs;
  options_.total_write_buffer_size = 128 << 10;  // 64 KiB each
  options_.write_buffer_size = 8 << 20;
  options_.max_immutable_memtables = 100;  // keep the engine-wide stop out of the way
  Open();
  ASSERT_NO_FATAL_FAILURE(CreateTenantsAAndB());
  ASSERT_OK(TenantOf("b").CreateTable("spare", OneFamily()));
  Table at = TableOf("a", "t"), bt = TableOf("b", "t");
  Tenant a = TenantOf("a"), b = TenantOf("b");
  const std::string value(1000, 'v');

  fs.Block();
  // Until a's memtable goes over its share and is switched; its flush hangs.
  int i = 0;
  while (StatsOf(a).early_flushes == 0) {
    ASSERT_LT(i, 1000);
    ASSERT_OK(at.Mutate(WriteOptions(), "r" + std::to_string(i++), PutOf(value)));
  }
  ASSERT_GT(StatsOf(a).immutable_memtable_bytes, StatsOf(a).memtable_share);

  std::atomic<bool> done{false};
  Status blocked_write;
  std::thread writer([&] {
    blocked_write = at.Mutate(WriteOptions(), "late", PutOf(value));
    done.store(true);
  });
  // The stall is counted when it starts.
  ASSERT_TRUE(Eventually([&] { return StatsOf(a).memtable_stalls == 1; }));
  // A drop, and tenant b's writes and reads, go on while a waits.
  std::thread dropper = ExpectDropNotHeld(
      "b", "spare", "the write held by tenant a's memtable share", [&] { fs.Unblock(); });
  for (int j = 0; j < 20; j++) {
    ASSERT_OK(bt.Mutate(WriteOptions(), "r" + std::to_string(j), PutOf(value)));
  }
  ASSERT_EQ(bt.ReadRow(ReadOptions(), "r19")->size(), 1u);
  EXPECT_FALSE(done.load());  // it cannot finish before a's flush does
  EXPECT_EQ(at.ReadRow(ReadOptions(), "late")->size(), 0u);

  fs.Unblock();
  writer.join();
  dropper.join();
  ASSERT_OK(blocked_write);
  EXPECT_EQ(at.ReadRow(ReadOptions(), "late")->size(), 1u);
  EXPECT_EQ(StatsOf(a).memtable_stalls, 1u);
  EXPECT_EQ(StatsOf(b).memtable_stalls, 0u);
  EXPECT_EQ(StatsOf(b).early_flushes, 0u);
}

// Engine::Flush waits for the flushes without the engine's gate: one
// tenant's stuck flush keeps the Flush waiting, but no drop and no other
// tenant's writes.
TEST_F(TenantTest, FlushWaitingForAStuckFlushHoldsUpNoDrop) {
  BlockingTableFs& fs = blocking_fs_;
  options_.file_system = &fs;
  Open();
  ASSERT_NO_FATAL_FAILURE(CreateTenantsAAndB());
  ASSERT_OK(TenantOf("b").CreateTable("spare", OneFamily()));
  Table at = TableOf("a", "t"), bt = TableOf("b", "t");
  ASSERT_OK(at.Mutate(WriteOptions(), "r", PutOf("v")));

  fs.Block();  // a's flush hangs
  std::atomic<bool> flushed{false};
  Status flush;
  std::thread flusher([&] {
    flush = engine_->Flush();
    flushed.store(true);
  });
  EXPECT_TRUE(Eventually([&] { return engine_->GetStats().immutable_memtables == 1; }));
  std::thread dropper = ExpectDropNotHeld("b", "spare", "a Flush waiting for tenant a's flush",
                                          [&] { fs.Unblock(); });
  EXPECT_OK(bt.Mutate(WriteOptions(), "r", PutOf("v")));
  EXPECT_FALSE(flushed.load());  // it cannot end before a's flush does

  fs.Unblock();
  flusher.join();
  dropper.join();
  EXPECT_OK(flush);
  EXPECT_EQ(engine_->GetStats().immutable_memtables, 0u);
}

// Level-0 backpressure counts the writing tenant's own level-0 files: a
// tenant whose compactions fall behind stops, the other writes on.
TEST_F(TenantTest, LevelZeroStopHoldsOnlyTheTenantOverTheTrigger) {
  BlockingTableFs& fs = blocking_fs_;
  OpenWithLevelZeroStopAtTwo();
  ASSERT_NO_FATAL_FAILURE(CreateTenantsAAndB());
  Table at = TableOf("a", "t"), bt = TableOf("b", "t");
  ASSERT_NO_FATAL_FAILURE(StallLevelZero(at));

  // Tenant b writes on, neither stopped nor slowed.
  ExpectOnlyTenantAHeld(
      at, bt, "late", "b", [&] { return engine_->GetStats().write_stops; },
      "tenant a's level 0", [&] { EXPECT_EQ(engine_->GetStats().write_slowdowns, 0u); },
      [&] { fs.UnblockReads(); });
}

// A write held by its tenant's level-0 stop (which it waits for without the
// engine's gate) ends with NotFound when its tenant is dropped meanwhile,
// although the tenant's compactions never catch up.
TEST_F(TenantTest, DropEndsAWriteHeldByTheTenantsBackpressure) {
  BlockingTableFs& fs = blocking_fs_;
  OpenWithLevelZeroStopAtTwo();
  ASSERT_OK(engine_->CreateTenant("a"));
  ASSERT_OK(TenantOf("a").CreateTable("t", OneFamily()));
  Table at = TableOf("a", "t");
  ASSERT_NO_FATAL_FAILURE(StallLevelZero(at));

  std::atomic<bool> done{false};
  Status held;
  std::thread writer([&] {
    held = at.Mutate(WriteOptions(), "late", PutOf("x"));
    done.store(true);
  });
  EXPECT_TRUE(Eventually([&] { return engine_->GetStats().write_stops == 1; }));
  ASSERT_OK(engine_->DropTenant("a"));
  const bool ended = Eventually([&] { return done.load(); });
  if (!ended) {  // fail rather than hang: Close ends the wait
    fs.UnblockReads();
    EXPECT_OK(engine_->Close());
  }
  writer.join();
  EXPECT_TRUE(ended) << "the write waited on after its tenant was dropped";
  EXPECT_TRUE(held.IsNotFound()) << held.ToString();
}

// The level-0 counts behind backpressure (a tenant's own, and the engine's
// max_level0_files) are right from the open on, and a dropped table's
// level 0 stops counting when it is dropped, not at the next flush or
// compaction.
TEST_F(TenantTest, LevelZeroCountsHoldAfterReopenAndDrop) {
  options_.level0_compaction_trigger = 100;  // files stay on level 0
  options_.level0_slowdown_trigger = 200;
  options_.level0_stop_trigger = 300;
  Open();
  ASSERT_OK(engine_->CreateTenant("a"));
  ASSERT_OK(TenantOf("a").CreateTable("big", OneFamily()));
  ASSERT_OK(TenantOf("a").CreateTable("small", OneFamily()));
  Table big = TableOf("a", "big"), small = TableOf("a", "small");
  for (int round = 0; round < 3; round++) {
    ASSERT_OK(big.Mutate(WriteOptions(), "r", PutOf("v" + std::to_string(round))));
    if (round == 0) {
      ASSERT_OK(small.Mutate(WriteOptions(), "r", PutOf("v")));
    }
    ASSERT_OK(engine_->Flush());
  }
  ASSERT_TRUE(Eventually([&] { return engine_->GetStats().max_level0_files == 3; }));

  Reopen();
  EXPECT_EQ(engine_->GetStats().max_level0_files, 3u) << "not counted at open";
  ASSERT_OK(TenantOf("a").DropTable("big"));
  EXPECT_EQ(engine_->GetStats().max_level0_files, 1u) << "the dropped table still counts";
  ASSERT_OK(engine_->DropTenant("a"));
  EXPECT_EQ(engine_->GetStats().max_level0_files, 0u);
}

// The engine-wide memtable stop (max_immutable_memtables) holds the tenants
// whose memtables wait for the flushes, not one whose memtables do not.
TEST_F(TenantTest, MemtableStopHoldsOnlyTenantsWithMemtablesWaiting) {
  BlockingTableFs& fs = blocking_fs_;
  options_.file_system = &fs;
  options_.write_buffer_size = 64 << 10;
  options_.max_immutable_memtables = 2;
  Open();
  ASSERT_NO_FATAL_FAILURE(CreateTenantsAAndB());
  Table at = TableOf("a", "t"), bt = TableOf("b", "t");
  Tenant a = TenantOf("a"), b = TenantOf("b");
  const std::string value(1000, 'v');
  struct Unblock {
    BlockingTableFs* fs;
    ~Unblock() { fs->Unblock(); }  // so a failed check cannot hang the engine's close
  } unblock{&fs};

  fs.Block();
  // a fills memtables until two wait for their (hanging) flushes.
  int i = 0;
  while (engine_->GetStats().immutable_memtables < 2) {
    ASSERT_LT(i, 1000);
    ASSERT_OK(at.Mutate(WriteOptions(), "r" + std::to_string(i++), PutOf(value)));
  }
  ASSERT_GT(StatsOf(a).immutable_memtable_bytes, 0u);
  ASSERT_EQ(StatsOf(b).immutable_memtable_bytes, 0u);

  // Tenant b, none of whose memtables waits, writes on (less than a memtable).
  ExpectOnlyTenantAHeld(
      at, bt, value, value, [&] { return engine_->GetStats().memtable_stops; },
      "tenant a's memtables", [] {}, [&] { fs.Unblock(); });
}

// ----------------------------------------------------------------------------
// Disk quotas

TEST_F(TenantTest, QuotaRefusesWritesThatAddDataButNotDeletes) {
  Open();
  TenantOptions q;
  q.disk_quota = 64 << 10;
  ASSERT_OK(engine_->CreateTenant("a", q));
  ASSERT_OK(engine_->CreateTenant("b"));
  ASSERT_OK(TenantOf("a").CreateTable("t", OneFamily()));
  ASSERT_OK(TenantOf("a").CreateTable("u", OneFamily()));
  ASSERT_OK(TenantOf("b").CreateTable("t", OneFamily()));
  Table at = TableOf("a", "t"), au = TableOf("a", "u"), bt = TableOf("b", "t");
  const std::string value(1000, 'v');

  int written = 0;
  Status s;
  while (true) {
    ASSERT_LT(written, 1000);
    s = at.Mutate(WriteOptions(), "r" + std::to_string(written), PutOf(value));
    if (!s.ok()) break;
    written++;
  }
  ASSERT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_NE(s.ToString().find("'a'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("65536"), std::string::npos) << s.ToString();
  EXPECT_GT(written, 30);
  const std::string refused = "r" + std::to_string(written);
  EXPECT_EQ(at.ReadRow(ReadOptions(), refused)->size(), 0u);
  const std::vector<std::string> before = Dump(at);

  auto check_refusals = [&] {
    const std::string big(16 << 10, 'x');
    EXPECT_TRUE(at.Mutate(WriteOptions(), "new", PutOf(big)).IsResourceExhausted());
    EXPECT_TRUE(au.Mutate(WriteOptions(), "new", PutOf(big)).IsResourceExhausted());
    // A put with a delete still adds data.
    RowMutation mixed = PutOf(big);
    mixed.DeleteRow();
    EXPECT_TRUE(at.Mutate(WriteOptions(), "r0", mixed).IsResourceExhausted());
    auto cam = at.CheckAndMutate(WriteOptions(), "new", {}, PutOf(big));
    EXPECT_TRUE(cam.status().IsResourceExhausted());
    RowMutation del;
    del.DeleteRow();
    auto batch = at.CheckAndMutateBatch(
        WriteOptions(), {ConditionalMutation{"r1", {}, del}, ConditionalMutation{"new", {}, PutOf(big)}});
    EXPECT_TRUE(batch.status().IsResourceExhausted());
    EXPECT_EQ(Dump(at), before);  // nothing of those was written
    EXPECT_EQ(Dump(au), std::vector<std::string>());
    // Other tenants are not limited.
    EXPECT_OK(bt.Mutate(WriteOptions(), "big", PutOf(big)));
  };
  check_refusals();
  Reopen();
  at = TableOf("a", "t"), au = TableOf("a", "u"), bt = TableOf("b", "t");
  check_refusals();
  ASSERT_OK(engine_->Flush());
  EXPECT_GT(StatsOf(TenantOf("a")).sstable_bytes, 0u);
  check_refusals();
  Reopen();
  at = TableOf("a", "t"), au = TableOf("a", "u"), bt = TableOf("b", "t");
  check_refusals();
  EXPECT_GE(StatsOf(TenantOf("a")).quota_rejections, 5u);

  // Deletes go through, plain and conditional.
  RowMutation del;
  del.DeleteRow();
  ASSERT_OK(at.Mutate(WriteOptions(), "r0", del));
  RowMutation del_col;
  del_col.DeleteColumn("f", "q");
  auto cam = at.CheckAndMutate(WriteOptions(), "r1", {}, del_col);
  ASSERT_OK(cam);
  EXPECT_TRUE(cam->applied);
  auto batch = at.CheckAndMutateBatch(WriteOptions(), {ConditionalMutation{"r2", {}, del}});
  ASSERT_OK(batch);
  EXPECT_EQ(at.ReadRow(ReadOptions(), "r0")->size(), 0u);
  EXPECT_EQ(at.ReadRow(ReadOptions(), "r1")->size(), 0u);
  EXPECT_EQ(at.ReadRow(ReadOptions(), "r2")->size(), 0u);

  // A larger quota lets writes in again.
  q.disk_quota = 1 << 30;
  ASSERT_OK(engine_->SetTenantOptions("a", q));
  ASSERT_OK(at.Mutate(WriteOptions(), "new", PutOf(value)));
  // Well below what the tenant holds now (the rows written above, some
  // 64 KiB in all), so that the next put is refused whatever the table
  // format's overhead per cell.
  q.disk_quota = 32 << 10;
  ASSERT_OK(engine_->SetTenantOptions("a", q));
  EXPECT_TRUE(au.Mutate(WriteOptions(), "x", PutOf(value)).IsResourceExhausted());

  // Dropping the table frees its bytes.
  ASSERT_OK(TenantOf("a").DropTable("t"));
  EXPECT_EQ(StatsOf(TenantOf("a")).sstable_bytes, 0u);
  EXPECT_EQ(StatsOf(TenantOf("a")).memtable_bytes, 0u);
  ASSERT_OK(au.Mutate(WriteOptions(), "x", PutOf(value)));
}

// ----------------------------------------------------------------------------
// Write rate limits

TEST_F(TenantTest, RateLimitCountsWaitsOfTheLimitedTenantOnly) {
  Open();
  TenantOptions limited;
  limited.write_rate_limit = 100 << 10;  // 100 KiB/s; the burst is 100 ms, ~10 KiB
  ASSERT_OK(engine_->CreateTenant("a", limited));
  ASSERT_OK(engine_->CreateTenant("b"));
  ASSERT_OK(TenantOf("a").CreateTable("t", OneFamily()));
  ASSERT_OK(TenantOf("b").CreateTable("t", OneFamily()));
  Table at = TableOf("a", "t"), bt = TableOf("b", "t");
  Tenant a = TenantOf("a"), b = TenantOf("b");
  const std::string value(30 << 10, 'v');  // 300 ms of a's rate each

  ASSERT_OK(at.Mutate(WriteOptions(), "r1", PutOf(value)));
  EXPECT_EQ(StatsOf(a).rate_limit_stalls, 1u);
  // The first write waits for its cost less the burst credit: 200 ms.
  EXPECT_GE(StatsOf(a).rate_limit_stall_micros, 150000u);
  auto cam = at.CheckAndMutate(WriteOptions(), "r2", {}, PutOf(value));
  ASSERT_OK(cam);
  EXPECT_EQ(StatsOf(a).rate_limit_stalls, 2u);
  auto batch = at.CheckAndMutateBatch(WriteOptions(), {ConditionalMutation{"r3", {}, PutOf(value)}});
  ASSERT_OK(batch);
  EXPECT_EQ(StatsOf(a).rate_limit_stalls, 3u);
  EXPECT_GE(StatsOf(a).rate_limit_stall_micros, 150000u + 2 * 250000u);
  // A pure check writes nothing and does not wait.
  auto check = at.CheckAndMutate(WriteOptions(), "r1",
                                 {Condition::CellExists("f", "q", 1)}, RowMutation());
  ASSERT_OK(check);
  EXPECT_EQ(StatsOf(a).rate_limit_stalls, 3u);

  for (int i = 0; i < 5; i++) {
    ASSERT_OK(bt.Mutate(WriteOptions(), "r" + std::to_string(i), PutOf(value)));
  }
  EXPECT_EQ(StatsOf(b).rate_limit_stalls, 0u);
  EXPECT_EQ(StatsOf(b).rate_limit_stall_micros, 0u);

  // Lifting the limit stops the waits.
  ASSERT_OK(engine_->SetTenantOptions("a", TenantOptions()));
  ASSERT_OK(at.Mutate(WriteOptions(), "r4", PutOf(value)));
  EXPECT_EQ(StatsOf(a).rate_limit_stalls, 3u);
  EXPECT_EQ(at.ReadRow(ReadOptions(), "r3")->size(), 1u);
}

// ----------------------------------------------------------------------------
// Stats

TEST_F(TenantTest, StatsAddUp) {
  Open();
  ASSERT_OK(engine_->CreateTenant("a"));
  ASSERT_OK(engine_->CreateTenant("b"));
  ASSERT_OK(engine_->CreateTenant("idle"));
  ASSERT_OK(TenantOf("a").CreateTable("t", TwoGroups()));
  ASSERT_OK(TenantOf("b").CreateTable("t", OneFamily()));
  ASSERT_OK(TenantOf("idle").CreateTable("t", OneFamily()));
  Table at = TableOf("a", "t"), bt = TableOf("b", "t"), it = TableOf("idle", "t");
  Tenant a = TenantOf("a"), b = TenantOf("b"), idle = TenantOf("idle");

  uint64_t a_bytes = 0, b_bytes = 0;
  for (int i = 0; i < 50; i++) {
    const std::string row = "row" + std::to_string(i);
    RowMutation m;
    m.Put("a", "qa", 1, "x" + std::to_string(i)).Put("b", "qb", 2, std::string(100, 'y'));
    ASSERT_OK(at.Mutate(WriteOptions(), row, m));
    a_bytes += row.size() + 1 + 2 + 1 + std::to_string(i).size() + 1 + 2 + 100;
  }
  for (int i = 0; i < 30; i++) {
    const std::string row = "k" + std::to_string(i);
    ASSERT_OK(bt.Mutate(WriteOptions(), row, PutOf("value")));
    b_bytes += row.size() + 1 + 1 + 5;
  }
  // One conditional write applies, one does not; deletes count as written.
  auto ok = bt.CheckAndMutate(WriteOptions(), "k0", {Condition::CellExists("f", "q", 1)},
                              PutOf("w"));
  ASSERT_OK(ok);
  ASSERT_TRUE(ok->applied);
  b_bytes += 2 + 1 + 1 + 1;
  auto no = bt.CheckAndMutate(WriteOptions(), "k1", {Condition::CellExists("f", "q", 9)},
                              PutOf("w"));
  ASSERT_OK(no);
  ASSERT_FALSE(no->applied);
  RowMutation del;
  del.DeleteColumn("f", "q");
  auto batch = bt.CheckAndMutateBatch(
      WriteOptions(), {ConditionalMutation{"k2", {}, del}, ConditionalMutation{"k3", {}, del}});
  ASSERT_OK(batch);
  b_bytes += 2 * (2 + 1 + 1);
  ASSERT_OK(it.Mutate(WriteOptions(), "only", PutOf("v")));

  for (int i = 0; i < 7; i++) ASSERT_OK(at.ReadRow(ReadOptions(), "row" + std::to_string(i)));
  for (int i = 0; i < 3; i++) ASSERT_OK(bt.ReadRow(ReadOptions(), "k" + std::to_string(i)));
  EXPECT_EQ(Dump(at).size(), 100u);  // one scan
  EXPECT_EQ(Dump(bt).size(), 28u);
  ASSERT_OK(bt.Scan(ReadOptions(), ScanSpec()));

  TenantStats sa = StatsOf(a), sb = StatsOf(b), si = StatsOf(idle);
  EXPECT_EQ(sa.row_writes, 50u);
  EXPECT_EQ(sa.bytes_written, a_bytes);
  EXPECT_EQ(sb.row_writes, 30u + 1 + 2);
  EXPECT_EQ(sb.bytes_written, b_bytes);
  EXPECT_EQ(si.row_writes, 1u);
  EXPECT_EQ(sa.row_reads, 7u);
  EXPECT_EQ(sb.row_reads, 3u);
  EXPECT_EQ(si.row_reads, 0u);
  EXPECT_EQ(sa.scans, 1u);
  EXPECT_EQ(sb.scans, 2u);
  EXPECT_EQ(sa.row_writes + sb.row_writes + si.row_writes, engine_->GetStats().writes);
  EXPECT_GT(sa.memtable_bytes, sb.memtable_bytes);
  EXPECT_GT(sb.memtable_bytes, si.memtable_bytes);
  EXPECT_GT(si.memtable_bytes, 0u);
  EXPECT_EQ(sa.immutable_memtable_bytes, 0u);
  EXPECT_EQ(sa.sstable_bytes, 0u);
  EXPECT_EQ(sa.memtable_share + sb.memtable_share + si.memtable_share,
            options_.total_write_buffer_size - options_.total_write_buffer_size % 3);

  ASSERT_OK(engine_->Flush());
  sa = StatsOf(a), sb = StatsOf(b), si = StatsOf(idle);
  EXPECT_EQ(sa.memtable_bytes + sb.memtable_bytes + si.memtable_bytes, 0u);
  EXPECT_GT(sa.sstable_bytes, 0u);
  EXPECT_GT(sb.sstable_bytes, 0u);
  EXPECT_GT(si.sstable_bytes, 0u);
  EXPECT_EQ(sa.sstable_bytes + sb.sstable_bytes + si.sstable_bytes,
            engine_->GetStats().table_bytes);

  // Reads from SSTables charge the reader's tenant in the block cache.
  EXPECT_EQ(sa.block_cache_bytes, 0u);
  for (int i = 0; i < 50; i++) ASSERT_OK(at.ReadRow(ReadOptions(), "row" + std::to_string(i)));
  ASSERT_OK(bt.ReadRow(ReadOptions(), "k5"));
  sa = StatsOf(a), sb = StatsOf(b), si = StatsOf(idle);
  EXPECT_GT(sa.block_cache_bytes, 0u);
  EXPECT_GT(sb.block_cache_bytes, 0u);
  EXPECT_EQ(si.block_cache_bytes, 0u);
  EXPECT_GT(sa.block_cache_bytes, sb.block_cache_bytes);

  // Counters start again at open; gauges are recounted.
  Reopen();
  TenantStats ra = StatsOf(TenantOf("a"));
  EXPECT_EQ(ra.row_writes, 0u);
  EXPECT_EQ(ra.sstable_bytes, sa.sstable_bytes);
  EXPECT_EQ(ra.memtable_bytes, 0u);

  idle = TenantOf("idle");
  ASSERT_OK(engine_->DropTenant("idle"));
  EXPECT_TRUE(idle.GetStats().status().IsNotFound());
}

// ----------------------------------------------------------------------------
// Isolation

TEST_F(TenantTest, OneTenantsHandlesNeverReachAnothersData) {
  Open();
  ASSERT_OK(engine_->CreateTenant("a"));
  ASSERT_OK(engine_->CreateTenant("b"));
  Tenant a = TenantOf("a"), b = TenantOf("b");
  // Same table names in both tenants, and one only b has.
  ASSERT_OK(a.CreateTable("t", OneFamily()));
  ASSERT_OK(b.CreateTable("t", OneFamily()));
  ASSERT_OK(b.CreateTable("only_b", TwoGroups()));
  Table at = *a.OpenTable("t");
  Table bt = *b.OpenTable("t"), bo = *b.OpenTable("only_b");
  for (int i = 0; i < 20; i++) {
    const std::string row = "r" + std::to_string(i);
    ASSERT_OK(bt.Mutate(WriteOptions(), row, PutOf("b-secret-" + std::to_string(i))));
    RowMutation m;
    m.Put("a", "q", 5, "grp-a").Put("b", "q", 5, "grp-b");
    ASSERT_OK(bo.Mutate(WriteOptions(), row, m));
  }
  ASSERT_OK(bt.Mutate(WriteOptions(), "shared", PutOf("b-value")));
  const std::vector<std::string> b_t = Dump(bt), b_only = Dump(bo);
  const TenantStats b_stats = StatsOf(b);
  ASSERT_EQ(b_t.size(), 21u);

  auto b_untouched = [&] {
    auto bt2 = b.OpenTable("t");
    ASSERT_OK(bt2);
    EXPECT_EQ(Dump(*bt2), b_t);
    auto bo2 = b.OpenTable("only_b");
    ASSERT_OK(bo2);
    EXPECT_EQ(Dump(*bo2), b_only);
    EXPECT_EQ(*b.ListTables(), (std::vector<std::string>{"only_b", "t"}));
  };

  // The catalog: a sees only its own names.
  EXPECT_TRUE(a.OpenTable("only_b").status().IsNotFound());
  EXPECT_EQ(*a.ListTables(), std::vector<std::string>{"t"});
  EXPECT_TRUE(a.DropTable("only_b").IsNotFound());
  EXPECT_TRUE(a.CreateTable("t", OneFamily()).IsAlreadyExists());  // a's own "t"
  ASSERT_OK(a.CreateTable("only_b", OneFamily()));  // a's own, new and empty
  Table ao = *a.OpenTable("only_b");
  EXPECT_TRUE(Dump(ao).empty());
  EXPECT_TRUE(ao.ReadRow(ReadOptions(), "r1")->empty());
  b_untouched();

  // Reads and scans through a's "t" see nothing of b's "t".
  EXPECT_TRUE(at.ReadRow(ReadOptions(), "shared")->empty());
  EXPECT_TRUE(at.ReadRow(ReadOptions(), "r3")->empty());
  EXPECT_TRUE(Dump(at).empty());
  ScanSpec range;
  range.start_row = "r";
  range.end_row = "s";
  auto scan = at.Scan(ReadOptions(), range);
  ASSERT_OK(scan);
  EXPECT_FALSE((*scan)->Valid());

  // Writes through a's "t" land in a's "t" only.
  ASSERT_OK(at.Mutate(WriteOptions(), "shared", PutOf("a-value")));
  RowMutation del_row;
  del_row.DeleteRow();
  ASSERT_OK(at.Mutate(WriteOptions(), "r1", del_row));
  RowMutation del_col;
  del_col.DeleteColumn("f", "q");
  ASSERT_OK(at.Mutate(WriteOptions(), "r2", del_col));
  EXPECT_EQ(at.ReadRow(ReadOptions(), "shared")->at(0).value, "a-value");
  // A family only b's table has is unknown to a's.
  RowMutation other_family;
  other_family.Put("a", "q", 1, "x");
  EXPECT_TRUE(at.Mutate(WriteOptions(), "r1", other_family).IsInvalidArgument());
  b_untouched();

  // Check-and-mutate through a's "t" sees a's cells, never b's.
  auto cam = at.CheckAndMutate(WriteOptions(), "r3", {Condition::CellExists("f", "q", 1)},
                               del_row);
  ASSERT_OK(cam);
  EXPECT_FALSE(cam->applied);  // b's r3 has that cell; a's does not
  auto cam2 = at.CheckAndMutate(WriteOptions(), "shared",
                                {Condition::ValueEquals("f", "q", 1, "b-value")}, del_row);
  ASSERT_OK(cam2);
  EXPECT_FALSE(cam2->applied);
  ASSERT_EQ(cam2->failures.size(), 1u);
  for (const Cell& c : cam2->failures[0].cells) EXPECT_EQ(c.value, "a-value");
  auto cam3 = at.CheckAndMutate(WriteOptions(), "r4", {Condition::NoCellInRange("f", "q", 1, kMaxTimestamp)},
                                PutOf("a-r4"));
  ASSERT_OK(cam3);
  EXPECT_TRUE(cam3->applied);  // b's r4 does not count
  std::vector<ConditionalMutation> batch;
  for (int i = 0; i < 20; i++) {
    batch.push_back(ConditionalMutation{"r" + std::to_string(i), {}, del_row});
  }
  auto applied = at.CheckAndMutateBatch(WriteOptions(), batch);
  ASSERT_OK(applied);
  b_untouched();

  // Dropping a's "t" and then tenant a leaves b whole.
  ASSERT_OK(a.DropTable("t"));
  EXPECT_TRUE(at.ReadRow(ReadOptions(), "shared").status().IsNotFound());
  b_untouched();
  ASSERT_OK(engine_->DropTenant("a"));
  EXPECT_TRUE(a.OpenTable("only_b").status().IsNotFound());
  EXPECT_TRUE(ao.Mutate(WriteOptions(), "r1", PutOf("x")).IsNotFound());
  b_untouched();

  // None of a's calls showed in b's counters.
  const TenantStats after = StatsOf(b);
  EXPECT_EQ(after.row_writes, b_stats.row_writes);
  EXPECT_EQ(after.bytes_written, b_stats.bytes_written);
  EXPECT_EQ(after.row_reads, b_stats.row_reads);

  // And b is whole after a reopen, from the log and from files.
  Reopen();
  b = TenantOf("b");
  b_untouched();
  ASSERT_OK(engine_->Flush());
  Reopen();
  b = TenantOf("b");
  b_untouched();
  EXPECT_TRUE(engine_->OpenTenant("a").status().IsNotFound());
}

}  // namespace
}  // namespace strata
