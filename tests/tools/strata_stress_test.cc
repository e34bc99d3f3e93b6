// Tests of strata-stress (tools/strata_stress.cc): its arguments, runs that
// pass, runs killed with SIGKILL and checked by the next run, and databases
// changed behind its back, which its verification must catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "strata/engine.h"
#include "tool_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using tool_test::Contains;
using tool_test::Quote;

constexpr char kSmall[] = " --tenants 1 --tables 1 --rows 64 --txn-rows 16 --threads 2";

test::RunResult Stress(const std::string& args) { return tool_test::Run(STRATA_STRESS_TOOL, args); }

TEST(StrataStressTest, HelpAndBadArguments) {
  test::RunResult r = Stress("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "usage: strata-stress --db DIR")) << r.out;
  for (const char* bad :
       {"", "--db", "--db /tmp/x --threads 0", "--db /tmp/x --threads 65",
        "--db /tmp/x --rows 2 --threads 4", "--db /tmp/x --bogus", "--db /tmp/x --seconds -1",
        "--db /tmp/x --faults=1", "--db /tmp/x extra"}) {
    r = Stress(bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "strata-stress --help")) << bad << "\n" << r.out;
  }
}

TEST(StrataStressTest, RunsKillsAndReopensCheckEveryRow) {
  test::ScratchDir dir("stress");
  const std::string db = " --db " + Quote(dir.Join("s")) + kSmall;
  test::RunResult r = Stress(db + " --seconds 2 --reopen-seconds 1 --seed 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, " 0 failed checks")) << r.out;
  // Killed mid-run, then checked by the next run.
  for (int i = 0; i < 3; i++) {
    r = test::RunCommand("timeout -s KILL 1.5 " + std::string(STRATA_STRESS_TOOL) + db +
                         " --seconds 0 --quiet");
    ASSERT_EQ(r.exit_code, 128 + 9) << r.out;
    r = Stress(db + " --verify-only");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  // Another layout for the same database is refused.
  r = Stress(" --db " + Quote(dir.Join("s")) + " --tenants 1 --tables 1 --rows 65 --txn-rows 16");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_TRUE(Contains(r.out, "made for --tenants 1 --tables 1 --rows 64")) << r.out;
}

TEST(StrataStressTest, FaultsAndPowerLossesLoseNothing) {
  test::ScratchDir dir("stress");
  test::RunResult r = Stress(" --db " + Quote(dir.Join("s")) + kSmall +
                             " --seconds 3 --reopen-seconds 1 --faults --seed 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, " 0 failed checks")) << r.out;
}

// Changes the database behind the tool's back with `change` (on table0 of
// tenant0) and returns what a verification then says.
template <typename Change>
test::RunResult VerifyAfter(const test::ScratchDir& dir, Change change) {
  const std::string db = " --db " + Quote(dir.Join("s")) + kSmall;
  test::RunResult r = Stress(db + " --seconds 1 --reopen-seconds 0 --seed 3");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  {
    Result<std::unique_ptr<Engine>> engine = Engine::Open(dir.Join("s/db"));
    EXPECT_OK(engine);
    Result<Table> table = (*engine)->OpenTenant("tenant0")->OpenTable("table0");
    EXPECT_OK(table);
    change(*table);
    EXPECT_OK((*engine)->Close());
  }
  return Stress(db + " --verify-only");
}

// The first row of the table that has cells, and its newest x timestamp.
std::pair<std::string, uint64_t> SomeRow(Table& table) {
  for (int i = 0; i < 64; i++) {
    char key[16];
    std::snprintf(key, sizeof(key), "row%07d", i);
    Result<std::vector<Cell>> cells = table.ReadRow(ReadOptions(), key);
    if (cells.ok() && !cells->empty()) return {key, (*cells)[0].timestamp};
  }
  ADD_FAILURE() << "no row written";
  return {"", 0};
}

TEST(StrataStressTest, VerificationCatchesALostRow) {
  test::ScratchDir dir("stress");
  test::RunResult r = VerifyAfter(dir, [](Table& t) {
    auto [row, ts] = SomeRow(t);
    RowMutation m;
    m.DeleteRow();
    ASSERT_OK(t.Mutate(WriteOptions(), row, m));
  });
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "holds version 0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "an acknowledged write was lost")) << r.out;
}

TEST(StrataStressTest, VerificationCatchesAHalfWrittenRow) {
  test::ScratchDir dir("stress");
  test::RunResult r = VerifyAfter(dir, [](Table& t) {
    auto [row, ts] = SomeRow(t);
    RowMutation m;
    m.Put("b", "z", ts + 1000, "half");
    ASSERT_OK(t.Mutate(WriteOptions(), row, m));
  });
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "not one whole version")) << r.out;
}

TEST(StrataStressTest, VerificationCatchesAnOlderVersion) {
  test::ScratchDir dir("stress");
  test::RunResult r = VerifyAfter(dir, [](Table& t) {
    // The newest version of a row with an older one under it goes: as if
    // the last write were lost and the one before it kept.
    for (int i = 0; i < 64; i++) {
      char key[16];
      std::snprintf(key, sizeof(key), "row%07d", i);
      Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), key);
      ASSERT_OK(cells);
      uint64_t newest = 0;
      int versions = 0;
      for (const Cell& c : *cells) {
        if (c.family != "a" || c.qualifier != "x") continue;
        newest = std::max(newest, c.timestamp);
        versions++;
      }
      if (versions < 2) continue;
      RowMutation m;
      for (const Cell& c : *cells) {
        if (c.timestamp == newest) m.DeleteCell(c.family, c.qualifier, c.timestamp);
      }
      ASSERT_OK(t.Mutate(WriteOptions(), key, m));
      return;
    }
    FAIL() << "no row with two versions";
  });
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "an acknowledged write was lost")) << r.out;
}

}  // namespace
}  // namespace strata
