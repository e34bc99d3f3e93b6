// strata (engine directory inspection) run as a child process on an engine
// directory made through the public API: what catalog shows, what check
// finds when files go missing, change size or are damaged, exit codes on bad
// input, and that it never changes a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/json.h"
#include "gc/progress_log.h"
#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/transaction.h"
#include "tool_test_util.h"
#include "txn/transaction_db.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ReadAll;
using test::RunResult;
using test::WriteAll;

using tool_test::Contains;
using tool_test::Quote;

RunResult RunTool(const std::string& args) { return tool_test::Run(STRATA_CLI_TOOL, args); }

// What `strata --json <args>` printed, parsed; its exit code in *exit_code.
Json RunJson(const std::string& args, int* exit_code) {
  return tool_test::RunJson(STRATA_CLI_TOOL, args, exit_code);
}

// The text of member `key` of element `i` of array member `array` of `j`.
std::string ElementText(const Json& j, const char* array, size_t i, const char* key) {
  const Json* a = j.Find(array);
  if (a == nullptr || i >= a->elements().size()) return "<none>";
  const Json* m = a->elements()[i].Find(key);
  return m == nullptr ? "<none>" : m->text();
}

class StrataCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.use_io_uring = false;
    auto engine = Engine::Open(dir_.path(), options);
    ASSERT_OK(engine);
    TenantOptions budget;
    budget.disk_quota = 1 << 30;
    ASSERT_OK((*engine)->CreateTenant("bank", budget));
    TableSchema schema;
    schema.locality_groups.push_back({.name = "locks", .in_memory = true});
    schema.families.push_back({.name = "balance"});
    schema.families.push_back(
        {.name = "lock", .locality_group = "locks", .column_markers_hide_by_timestamp = true});
    auto tenant = (*engine)->OpenTenant("bank");
    ASSERT_OK(tenant);
    ASSERT_OK(tenant->CreateTable("accounts", schema));
    auto table = tenant->OpenTable("accounts");
    ASSERT_OK(table);
    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < 200; i++) {
        RowMutation m;
        m.Put("balance", "b", 1 + round, std::to_string(100 + i));
        if (i % 10 == 0) m.Put("lock", "l", 1 + round, "held");
        ASSERT_OK(table->Mutate(WriteOptions(), "acct" + std::to_string(1000 + i), m));
      }
      ASSERT_OK((*engine)->Flush());
    }
    ASSERT_OK((*engine)->Close());
    for (const auto& e : std::filesystem::directory_iterator(dir_.Join("sst"))) {
      if (e.path().extension() == ".sst") tables_.push_back(e.path().string());
    }
    std::sort(tables_.begin(), tables_.end());
    ASSERT_GE(tables_.size(), 2u);
    manifest_ = ReadAll(dir_.Join("MANIFEST"));
  }

  test::ScratchDir dir_{"strata-cli"};
  std::vector<std::string> tables_;
  std::string manifest_;
};

TEST_F(StrataCliTest, HelpAndBadArguments) {
  RunResult r = RunTool("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "usage: strata <command>")) << r.out;
  for (const std::string& args :
       {std::string(""), std::string("catalog"), "frobnicate " + Quote(dir_.path()),
        "catalog --bogus " + Quote(dir_.path()), "check --files " + Quote(dir_.path()),
        "catalog --deep " + Quote(dir_.path()), "catalog " + Quote(dir_.Join("missing")),
        "catalog " + Quote(dir_.Join("MANIFEST")), "check " + Quote(dir_.Join("sst"))}) {
    r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
  }
  // Output that cannot be written is an error.
  r = RunTool("catalog " + Quote(dir_.path()) + " >/dev/full");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST_F(StrataCliTest, CatalogShowsTheSchemaTabletsAndFiles) {
  RunResult r = RunTool("catalog " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* want :
       {"tenant 1 'bank'", "disk quota 1.00 GiB", "table", "'accounts'", "'locks': in memory",
        "families: balance (id 1)", "families: lock (id 2, column markers hide by timestamp)",
        "rows [start, end)", "level 0: 2 files", "newest segment 0000000"}) {
    EXPECT_TRUE(Contains(r.out, want)) << want << "\n" << r.out;
  }
  r = RunTool("catalog --files " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::string name = std::filesystem::path(tables_[0]).filename().string();
  EXPECT_TRUE(Contains(r.out, name)) << r.out;
  EXPECT_TRUE(Contains(r.out, "'acct1000'")) << r.out;
  EXPECT_EQ(ReadAll(dir_.Join("MANIFEST")), manifest_);
}

TEST_F(StrataCliTest, CheckFindsMissingResizedAndDamagedFiles) {
  RunResult r = RunTool("check --deep " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "OK: every file the catalog names is there")) << r.out;

  // A stray table file is listed, not a problem.
  WriteAll(dir_.Join("sst/999999.sst"), "x");
  r = RunTool("check " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 not in the catalog")) << r.out;
  EXPECT_TRUE(Contains(r.out, "999999.sst")) << r.out;

  // A flipped byte keeps the size: only --deep finds it.
  const std::string good = ReadAll(tables_[0]);
  std::string bad = good;
  bad[bad.size() / 3] ^= 0x40;
  WriteAll(tables_[0], bad);
  r = RunTool("check " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunTool("check --deep " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "PROBLEM: " + tables_[0])) << r.out;

  WriteAll(tables_[0], good.substr(0, good.size() - 1));
  r = RunTool("check " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "the manifest records " + std::to_string(good.size()))) << r.out;

  std::filesystem::remove(tables_[0]);
  r = RunTool("check " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "is missing")) << r.out;
  WriteAll(tables_[0], good);

  // The log segment the manifest names as the newest.
  std::vector<std::filesystem::path> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("wal"))) {
    if (e.path().extension() == ".log") segments.push_back(e.path());
  }
  std::sort(segments.begin(), segments.end());
  ASSERT_FALSE(segments.empty());
  std::filesystem::remove(segments.back());
  r = RunTool("check " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, segments.back().filename().string() + " is missing")) << r.out;
  EXPECT_EQ(ReadAll(dir_.Join("MANIFEST")), manifest_);
}

// `strata gc` on a transaction-services directory: each tenant's published
// safepoint with its wall-clock time and its collector's progress; a damaged
// safepoint file is a problem.
TEST(StrataCliGcTest, ShowsEachTenantsSafepoint) {
  test::ScratchDir dir("strata-cli-gc");
  uint64_t safepoint = 0;
  {
    auto engine = Engine::Open(dir.Join("db"));
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("bank"));
    auto services = TransactionServices::Open(dir.Join("services"));
    ASSERT_OK(services);
    auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("bank"));
    ASSERT_OK(db);
    auto gc =
        GarbageCollector::Open(*services, db->get(), {.life_time_millis = 0, .interval_millis = 0});
    ASSERT_OK(gc);
    ASSERT_OK((*gc)->RunOnce());
    safepoint = (*gc)->safepoint();
    ASSERT_OK((*gc)->Close());
    ASSERT_OK((*db)->Close());
    ASSERT_OK((*engine)->Close());
  }
  RunResult r = RunTool("gc " + Quote(dir.Join("services")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "tenant bank: safepoint " + std::to_string(safepoint) + " ("))
      << r.out;
  EXPECT_TRUE(Contains(r.out, " UTC, logical ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  collected through " + std::to_string(safepoint) + " (")) << r.out;
  EXPECT_FALSE(Contains(r.out, "under way")) << r.out;
  int code = -1;
  Json j = RunJson("gc " + Quote(dir.Join("services")), &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ElementText(j, "tenants", 0, "tenant"), "bank");
  EXPECT_EQ(ElementText(j, "tenants", 0, "safepoint"), std::to_string(safepoint));
  EXPECT_TRUE(Contains(ElementText(j, "tenants", 0, "safepoint_time"), " UTC"));
  EXPECT_EQ(ElementText(j, "tenants", 0, "collected"), std::to_string(safepoint));

  // A round under way, as a collector stopped part way leaves it.
  {
    std::unique_ptr<gc::ProgressLog> log;
    ASSERT_OK(
        gc::ProgressLog::Open(FileSystem::Default(), dir.Join("services/GC_PROGRESS-bank"), &log));
    ASSERT_OK(log->StartRound(safepoint + 1));
    ASSERT_OK(log->RangeDone({"acc", "", "m"}));
  }
  r = RunTool("gc --files " + Quote(dir.Join("services")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "round at " + std::to_string(safepoint + 1) +
                                  " under way: locks resolved, 1 row ranges collected"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "table 'acc' rows the first to 'm'")) << r.out;

  r = RunTool("gc " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "no garbage collector's safepoint")) << r.out;

  const std::string file = dir.Join("services/GC_SAFEPOINT-bank");
  std::string bytes = ReadAll(file);
  ASSERT_EQ(bytes.size(), 8192u);
  for (size_t i = 0; i < 20; i++) bytes[i] ^= 0x5a;  // both slots' records
  for (size_t i = 4096; i < 4116; i++) bytes[i] ^= 0x5a;
  WriteAll(file, bytes);
  r = RunTool("gc " + Quote(dir.Join("services")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "tenant bank: Corruption")) << r.out;
  j = RunJson("gc " + Quote(dir.Join("services")), &code);
  EXPECT_EQ(code, 1);
  EXPECT_TRUE(Contains(ElementText(j, "tenants", 0, "error"), "Corruption"));

  r = RunTool("gc " + Quote(dir.Join("nothing-here")));
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

// `strata notifications`: a transactional table's pending notifications and
// acks, read from a snapshot while the engine still has the directory open
// (nothing flushed: the log holds them); the directory is left as it was.
TEST(StrataCliNotificationsTest, ShowsPendingNotificationsAndAcks) {
  test::ScratchDir dir("strata-cli-notify");
  auto engine = Engine::Open(dir.Join("db"));
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("app"));
  TableSchema plain;
  plain.families.push_back({.name = "f"});
  ASSERT_OK((*engine)->OpenTenant("app")->CreateTable("plain", plain));
  auto services = TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  TransactionDBOptions options;
  options.observed_columns = {{"docs", "in"}};
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("app"), options);
  ASSERT_OK(db);
  ASSERT_OK((*db)->CreateTable("docs"));
  auto write = [&](const std::string& row) {
    auto t = (*db)->Begin();
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("docs", row, "in", "x"));
    ASSERT_OK((*t)->Commit());
  };
  for (int i = 0; i < 3; i++) write("r1");
  write("r2");
  // An observer's run acknowledges r2; then r2 changes again.
  const txn::TxnKey trigger{"docs", "r2", "in"};
  auto run = txn::TxnDBOf(**db)->BeginObserverRun(&trigger);
  ASSERT_OK(run);
  ASSERT_OK((*run)->Commit());
  write("r2");

  const std::string manifest = ReadAll(dir.Join("db/MANIFEST"));
  RunResult r = RunTool("notifications --tenant=app --table=docs " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'r1' column 'in': 3 pending, newest ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'r2' column 'in': 1 pending, newest ")) << r.out;
  EXPECT_TRUE(Contains(r.out, ", ack " + std::to_string((*run)->start_ts()))) << r.out;
  EXPECT_TRUE(Contains(r.out, "4 notifications pending in 2 cells, the oldest from ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "; 1 cells with an ack")) << r.out;
  r = RunTool("notifications --rows=1 --tenant=app --table=docs " + Quote(dir.Join("db")));
  EXPECT_TRUE(Contains(r.out, "... 1 more cells")) << r.out;
  int code = -1;
  Json j = RunJson("notifications --tenant=app --table=docs " + Quote(dir.Join("db")), &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ElementText(j, "cells", 0, "row"), "r1");
  EXPECT_EQ(ElementText(j, "cells", 0, "pending"), "3");
  EXPECT_EQ(ElementText(j, "cells", 1, "ack"), std::to_string((*run)->start_ts()));
  ASSERT_NE(j.Find("notifications"), nullptr);
  EXPECT_EQ(j.Find("notifications")->text(), "4");
  EXPECT_EQ(j.Find("cells_with_ack")->text(), "1");
  EXPECT_EQ(ReadAll(dir.Join("db/MANIFEST")), manifest);
  // The snapshot beside the directory is gone.
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().rfind(".strata-snapshot-", 0), std::string::npos)
        << e.path();
  }

  // Bad input: exit 2, with a reason.
  r = RunTool("notifications --tenant=app " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 2);
  r = RunTool("notifications --tenant=nope --table=docs " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.out, "nope")) << r.out;
  r = RunTool("notifications --tenant=app --table=plain " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.out, "not transactional")) << r.out;
  r = RunTool("catalog --tenant=app " + Quote(dir.Join("db")));
  EXPECT_EQ(r.exit_code, 2);

  ASSERT_OK((*db)->Close());
  ASSERT_OK((*engine)->Close());
}

}  // namespace
}  // namespace strata
