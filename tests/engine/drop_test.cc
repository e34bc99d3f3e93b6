// Dropping tables and tenants: handles that end, names freed, files removed,
// other tables and tenants left alone, and drops during a flush, a
// compaction, and concurrent writes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "engine/test_hooks.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::ScratchDir;
using test::TableFilesOnDisk;
using test::TwoGroupSchema;

TEST_F(EngineTest, DropTableEndsItsHandlesAndFreesItsName) {
  for (int i = 0; i < 200; i++) ASSERT_OK(Put("r" + std::to_string(i), "b", "y", 1, "v"));
  ASSERT_OK(engine_->Compact());
  ASSERT_OK(Put("unflushed", "a", "x", 1, "v"));
  EXPECT_GT(TableFilesOnDisk(dir_), 0u);
  Table copy = table_;
  EXPECT_FALSE(table_.dropped());
  EXPECT_FALSE(Table().dropped());

  EXPECT_TRUE(tenant_.DropTable("nope").IsNotFound());
  ASSERT_OK(tenant_.DropTable("tab"));
  for (Table* t : {&table_, &copy}) {
    EXPECT_TRUE(t->dropped());
    Status s = t->Mutate(WriteOptions(), "r1", RowMutation().Put("b", "y", 2, "w"));
    EXPECT_TRUE(s.IsNotFound()) << s.ToString();
    EXPECT_NE(s.ToString().find("dropped"), std::string::npos) << s.ToString();
    EXPECT_TRUE(t->ReadRow(ReadOptions(), "r1").status().IsNotFound());
    EXPECT_TRUE(t->Scan(ReadOptions(), ScanSpec()).status().IsNotFound());
    EXPECT_TRUE(t->CheckAndMutate(WriteOptions(), "r1", {Condition::CellExists("b", "y", 1)},
                                  RowMutation().Put("b", "y", 2, "w"))
                    .status()
                    .IsNotFound());
    EXPECT_TRUE(t->CheckAndMutateBatch(WriteOptions(), {}).status().IsNotFound());
    EXPECT_TRUE(t->GetTabletStats().status().IsNotFound());
  }
  EXPECT_TRUE(tenant_.OpenTable("tab").status().IsNotFound());
  EXPECT_TRUE(tenant_.ListTables()->empty());
  EXPECT_TRUE(tenant_.DropTable("tab").IsNotFound());
  EXPECT_EQ(TableFilesOnDisk(dir_), 0u);
  EXPECT_EQ(engine_->GetStats().table_files, 0u);

  // The name is free again, for a new and empty table.
  ASSERT_OK(tenant_.CreateTable("tab", TwoGroupSchema()));
  table_ = *tenant_.OpenTable("tab");
  EXPECT_FALSE(table_.dropped());
  EXPECT_TRUE(copy.dropped());
  EXPECT_TRUE(Read("r1").empty());
  EXPECT_TRUE(Read("unflushed").empty());
  ASSERT_OK(Put("new", "a", "x", 1, "n"));
  EXPECT_TRUE(copy.ReadRow(ReadOptions(), "new").status().IsNotFound());

  // The log still holds records of the dropped table: replay skips them.
  Reopen();
  EXPECT_TRUE(Read("r1").empty());
  EXPECT_TRUE(Read("unflushed").empty());
  EXPECT_EQ(Read("new").size(), 1u);
  ASSERT_OK(engine_->Compact());
  Reopen();
  EXPECT_EQ(Read("new").size(), 1u);
}

TEST_F(EngineTest, DropTenantDropsItsTablesAndLeavesOthersAlone) {
  ASSERT_OK(engine_->CreateTenant("t2"));
  Tenant t2 = *engine_->OpenTenant("t2");
  ASSERT_OK(t2.CreateTable("tab", TwoGroupSchema()));
  ASSERT_OK(t2.CreateTable("other", TwoGroupSchema()));
  Table t2tab = *t2.OpenTable("tab");
  for (int i = 0; i < 100; i++) {
    ASSERT_OK(Put("r" + std::to_string(i), "b", "y", 1, "mine"));
    ASSERT_OK(t2tab.Mutate(WriteOptions(), "r" + std::to_string(i),
                           RowMutation().Put("b", "y", 1, "theirs")));
  }
  ASSERT_OK(engine_->Flush());

  EXPECT_TRUE(engine_->DropTenant("nobody").IsNotFound());
  ASSERT_OK(engine_->DropTenant("t2"));
  EXPECT_EQ(*engine_->ListTenants(), std::vector<std::string>{"t1"});
  EXPECT_TRUE(engine_->OpenTenant("t2").status().IsNotFound());
  EXPECT_TRUE(t2.OpenTable("tab").status().IsNotFound());
  EXPECT_TRUE(t2.ListTables().status().IsNotFound());
  EXPECT_TRUE(t2.CreateTable("x", TwoGroupSchema()).IsNotFound());
  EXPECT_TRUE(t2.DropTable("other").IsNotFound());
  EXPECT_TRUE(t2tab.ReadRow(ReadOptions(), "r1").status().IsNotFound());
  EXPECT_TRUE(t2tab.dropped());
  EXPECT_FALSE(table_.dropped());
  ASSERT_EQ(Read("r1").size(), 1u);
  EXPECT_EQ(Read("r1")[0].value, "mine");

  Reopen();
  EXPECT_EQ(*engine_->ListTenants(), std::vector<std::string>{"t1"});
  EXPECT_EQ(Read("r99")[0].value, "mine");
  // A new tenant of the same name starts empty.
  ASSERT_OK(engine_->CreateTenant("t2"));
  EXPECT_TRUE(engine_->OpenTenant("t2")->ListTables()->empty());
}

// A table dropped while a compaction of it is between its manifest edit and
// showing its result: neither the outputs of a merge nor a file moved down
// may outlive the drop (they belong to no table; only a reopen would have
// deleted them).
using ParkedCompaction = test::ParkedHook<&engine::test_hooks::after_compaction_edit>;

// An in-memory group's flush pins its new file before recording it; a drop
// of the table meanwhile discards the file, and with it the pinned reader
// and the resident blocks charged to the tenant.
using ParkedFlush = test::ParkedHook<&engine::test_hooks::after_flush_log_sync>;

TEST(EngineDropTest, DropDuringAFlushOfAnInMemoryGroupUnpinsItsFile) {
  ScratchDir dir("drop-flush");
  EngineOptions options;
  options.write_buffer_size = 64 << 10;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  Tenant tenant = *(*engine)->OpenTenant("t");
  TableSchema schema;
  schema.locality_groups.push_back({.name = "mem", .in_memory = true});
  schema.families.push_back({.name = "a", .locality_group = "mem"});
  ASSERT_OK(tenant.CreateTable("tab", schema));
  Table table = *tenant.OpenTable("tab");
  ParkedFlush::Arm();
  // Fill the memtable until it switches; its flush stops in the hook. No
  // more writes: one held back by a full flush queue would keep the drop
  // out.
  for (int i = 0; (*engine)->GetStats().immutable_memtables == 0; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(100, 'v'));
    ASSERT_OK(table.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m));
  }
  ASSERT_TRUE(ParkedFlush::WaitReached());
  EXPECT_GT(tenant.GetStats()->block_cache_bytes, 0u);  // the new file's blocks
  table = Table();
  ASSERT_OK(tenant.DropTable("tab"));
  ParkedFlush::Release();
  for (int i = 0; i < 10000 && (*engine)->GetStats().immutable_memtables > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(tenant.GetStats()->block_cache_bytes, 0u);
  // No descriptor of a deleted table file stays open.
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    EXPECT_EQ(target.find(".sst (deleted)"), std::string::npos) << target;
  }
  ASSERT_OK((*engine)->Close());
}

class EngineDropDuringCompactionTest : public ::testing::TestWithParam<bool> {};

TEST_P(EngineDropDuringCompactionTest, LeavesNoFileBehind) {
  const bool trivial_move = GetParam();
  ScratchDir dir("drop-compaction");
  EngineOptions options;
  // One file is enough for a compaction, which then moves it down a level;
  // two overlapping ones are merged.
  options.level0_compaction_trigger = trivial_move ? 1 : 2;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_OK(engine);
  Table table = test::CreateOneFamilyTable(engine->get());
  ParkedCompaction::Arm();
  for (int file = 0; file < (trivial_move ? 1 : 2); file++) {
    for (int i = 0; i < 100; i++) {
      RowMutation m;
      m.Put("f", "q", 1 + file, std::string(100, 'v'));
      ASSERT_OK(table.Mutate(WriteOptions(), "r" + std::to_string(i), m));
    }
    ASSERT_OK((*engine)->Flush());
  }
  ASSERT_TRUE(ParkedCompaction::WaitReached());
  table = Table();
  ASSERT_OK((*engine)->OpenTenant("t")->DropTable("tab"));
  ParkedCompaction::Release();
  auto table_files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.Join("sst"))) {
      n += e.path().extension() == ".sst";
    }
    return n;
  };
  // The compaction ends on its own; its thread then purges obsolete files.
  for (int i = 0; i < 10000 && table_files() > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(table_files(), 0u);
  ASSERT_OK((*engine)->Close());
}

INSTANTIATE_TEST_SUITE_P(Kinds, EngineDropDuringCompactionTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "TrivialMove" : "Merge"; });

TEST(EngineDropTest, DropUnderConcurrentWritesAndCompactions) {
  test::ScratchDir dir("drop");
  EngineOptions o;
  o.write_buffer_size = 8 << 10;
  o.level0_compaction_trigger = 2;
  o.max_background_compactions = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  ASSERT_OK((*e)->CreateTenant("t"));
  Tenant tenant = *(*e)->OpenTenant("t");
  TableSchema s;
  s.families = {{.name = "f"}};
  ASSERT_OK(tenant.CreateTable("doomed", s));
  ASSERT_OK(tenant.CreateTable("kept", s));
  Table doomed = *tenant.OpenTable("doomed");
  Table kept = *tenant.OpenTable("kept");
  std::atomic<bool> stop{false};
  std::atomic<int> kept_rows{0};
  std::atomic<int> refused{0};
  std::thread doomed_writer([&] {
    for (int i = 0; !stop.load(); i++) {
      Status st = doomed.Mutate(WriteOptions{.sync = false}, "r" + std::to_string(i % 3000),
                                RowMutation().Put("f", "q", 1, std::string(50, 'd')));
      if (st.IsNotFound()) {
        refused++;
        continue;
      }
      ASSERT_OK(st);
      auto r = doomed.ReadRow(ReadOptions(), "r" + std::to_string(i % 3000));
      ASSERT_TRUE(r.ok() || r.status().IsNotFound()) << r.status().ToString();
    }
  });
  std::thread kept_writer([&] {
    for (int i = 0; i < 6000; i++) {
      ASSERT_OK(kept.Mutate(WriteOptions{.sync = false}, "r" + std::to_string(i),
                            RowMutation().Put("f", "q", 1, std::string(50, 'k'))));
      kept_rows = i + 1;
    }
  });
  while (kept_rows.load() < 2000) std::this_thread::yield();
  ASSERT_OK(tenant.DropTable("doomed"));
  kept_writer.join();
  while (refused.load() == 0) std::this_thread::yield();
  stop = true;
  doomed_writer.join();
  ASSERT_OK((*e)->Compact());
  ASSERT_OK((*e)->Close());
  e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  tenant = *(*e)->OpenTenant("t");
  EXPECT_EQ(*tenant.ListTables(), std::vector<std::string>{"kept"});
  kept = *tenant.OpenTable("kept");
  for (int i = 0; i < 6000; i += 7) {
    auto r = kept.ReadRow(ReadOptions(), "r" + std::to_string(i));
    ASSERT_OK(r);
    EXPECT_EQ(r->size(), 1u) << i;
  }
}

}  // namespace
}  // namespace strata
