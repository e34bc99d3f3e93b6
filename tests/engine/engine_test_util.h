// Set-ups the engine tests share.
#ifndef STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
#define STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "engine/test_hooks.h"
#include "strata/engine.h"
#include "util/forwarding_fs.h"
#include "util/gated_sync_fs.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::test {

// Families a and c in the in-memory group "small", b in the group "big".
inline TableSchema TwoGroupSchema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "small", .in_memory = true});
  s.locality_groups.push_back({.name = "big"});
  s.families.push_back({.name = "a", .locality_group = "small"});
  s.families.push_back({.name = "b", .locality_group = "big"});
  s.families.push_back({.name = "c", .locality_group = "small"});
  return s;
}

// Creates tenant "t" holding table "tab" with the one family "f" and
// returns the table; on failure the test fails and the handle is empty.
inline Table CreateOneFamilyTable(Engine* engine) {
  TableSchema s;
  s.families = {{.name = "f"}};
  Status st = engine->CreateTenant("t");
  if (st.ok()) st = engine->OpenTenant("t")->CreateTable("tab", s);
  if (!st.ok()) {
    ADD_FAILURE() << st.ToString();
    return Table();
  }
  return *engine->OpenTenant("t")->OpenTable("tab");
}

// Counts reads of files opened for random access (SSTables): opens and
// block reads.
class CountingReadFileSystem : public ForwardingFileSystem {
 public:
  Status NewRandomAccessFile(const std::string& p,
                             std::unique_ptr<RandomAccessFile>* r) override {
    std::unique_ptr<RandomAccessFile> f;
    STRATA_RETURN_IF_ERROR(ForwardingFileSystem::NewRandomAccessFile(p, &f));
    opens_++;
    *r = std::make_unique<Counted>(std::move(f), &reads_);
    return Status::OK();
  }
  uint64_t reads() const { return reads_.load() + opens_.load(); }

 private:
  class Counted : public RandomAccessFile {
   public:
    Counted(std::unique_ptr<RandomAccessFile> base, std::atomic<uint64_t>* reads)
        : base_(std::move(base)), reads_(reads) {}
    Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
      reads_->fetch_add(1);
      return base_->Read(offset, n, result, scratch);
    }
    Result<uint64_t> Size() const override { return base_->Size(); }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    std::atomic<uint64_t>* reads_;
  };
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> opens_{0};
};

// Options under which only residency keeps an in-memory group off the disk:
// a block cache far smaller than the data, room for two open tables, small
// files and early compactions. Reads go through `fs`.
inline EngineOptions InMemoryTestOptions(FileSystem* fs) {
  EngineOptions o;
  o.file_system = fs;
  o.write_buffer_size = 32 << 10;
  o.block_cache_size = 64 << 10;
  o.max_open_tables = 2;
  o.target_file_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  return o;
}

// Parks the engine thread that reaches the test hook `*Hook`
// (engine/test_hooks.h) until Release(), once per Arm(): a test forces an
// interleaving that is otherwise too narrow to reach.
template <std::atomic<void (*)()>* Hook>
class ParkedHook {
 public:
  static void Arm() {
    reached_ = false;
    released_ = false;
    Hook->store(&Park);
  }
  // Whether a thread reached the hook within about ten seconds.
  static bool WaitReached() {
    for (int i = 0; i < 10000 && !reached_; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return reached_;
  }
  static void Release() { released_ = true; }

 private:
  static void Park() {
    Hook->store(nullptr);
    reached_ = true;
    while (!released_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  static inline std::atomic<bool> reached_{false};
  static inline std::atomic<bool> released_{false};
};

// Rows "row<i>" for i in [begin, end) by `step` hold one cell each.
inline void ExpectOneCellPerRow(const Table& t, int begin, int end, int step) {
  for (int i = begin; i < end; i += step) {
    auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_OK(cells) << i;
    ASSERT_EQ(cells->size(), 1u) << i;
  }
}

// How many files the engine in `dir` holds in its sst/ directory.
inline size_t TableFilesOnDisk(const test::ScratchDir& dir) {
  std::vector<std::string> names;
  EXPECT_OK(FileSystem::Default()->GetChildren(dir.Join("sst"), &names));
  return names.size();
}

// An engine opened on a scratch directory with options_, holding tenant "t1"
// and its table "tab" (TwoGroupSchema()); a test changes options_ and calls
// Reopen() to open it again under them.
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    table_ = Table();
    tenant_ = Tenant();
    if (engine_) {
      ASSERT_OK(engine_->Close());
    }
    engine_.reset();
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    if (engine_->ListTenants()->empty()) {
      ASSERT_OK(engine_->CreateTenant("t1"));
      auto t = engine_->OpenTenant("t1");
      ASSERT_OK(t);
      ASSERT_OK(t->CreateTable("tab", TwoGroupSchema()));
    }
    auto t = engine_->OpenTenant("t1");
    ASSERT_OK(t);
    tenant_ = *t;
    auto tab = tenant_.OpenTable("tab");
    ASSERT_OK(tab);
    table_ = *tab;
  }

  Status Put(const std::string& row, const std::string& fam, const std::string& q, uint64_t ts,
             const std::string& v) {
    RowMutation m;
    m.Put(fam, q, ts, v);
    return table_.Mutate(WriteOptions(), row, m);
  }

  // Drops the handles, closes the engine and returns what Close said.
  Status CloseEngine() {
    table_ = Table();
    tenant_ = Tenant();
    Status s = engine_->Close();
    engine_.reset();
    return s;
  }

  // Reopens with apply_before_sync over `fs`, writes a:x at 1 = "old" to
  // row "a-other" (and to "r" when `r_old`), holds fs's fdatasyncs and starts
  // a thread that writes a:x at 2 = "new" to row "r" (its Mutate's status
  // goes to `check`); returns once that write is applied and its fdatasync
  // waits.
  std::thread StartHeldSyncedWrite(test::GatedSyncFileSystem* fs, bool r_old,
                                   std::function<void(const Status&)> check) {
    options_.file_system = fs;
    options_.apply_before_sync = true;
    Reopen();
    EXPECT_OK(Put("a-other", "a", "x", 1, "old"));
    if (r_old) {
      EXPECT_OK(Put("r", "a", "x", 1, "old"));
    }
    fs->Hold();
    std::thread writer([this, check = std::move(check)] {
      RowMutation m;
      m.Put("a", "x", 2, "new");
      check(table_.Mutate(WriteOptions(), "r", m));
    });
    fs->AwaitGatedSyncs(1);
    return writer;
  }

  // The rows of a whole-table scan, and its status in *status.
  std::vector<std::string> ScanRows(Status* status) {
    std::vector<std::string> rows;
    auto it = table_.Scan(ReadOptions(), ScanSpec());
    if (!it.ok()) {
      *status = it.status();
      return rows;
    }
    for (; (*it)->Valid(); (*it)->Next()) rows.emplace_back((*it)->row());
    *status = (*it)->status();
    return rows;
  }

  std::vector<Cell> Read(const std::string& row, const RowFilter& f = RowFilter()) {
    auto r = table_.ReadRow(ReadOptions(), row, f);
    EXPECT_OK(r);
    return r.ok() ? *r : std::vector<Cell>();
  }

  ScratchDir dir_{"engine"};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  Tenant tenant_;
  Table table_;
};

}  // namespace strata::test

#endif  // STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
