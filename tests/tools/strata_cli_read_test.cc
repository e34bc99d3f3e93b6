// strata's commands that read cells (get, scan, txn row, txn locks) and the
// --json form of every command, run as a child process on engine directories
// written here: a plain table with several families, versions and deletes,
// and a transactional table with committed, erased and rolled-back values
// and the locks of coordinators stopped after their prewrites. Each run also
// checks that the directory is left exactly as it was (names and bytes) and
// that no snapshot directory is left beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "strata/engine.h"
#include "strata/transaction.h"
#include "tool_test_util.h"
#include "txn/records.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"
#include "txn_test_util.h"
#include "util/fake_clock.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ReadAll;
using test::RunResult;
using test::WriteAll;
using tool_test::Contains;
using tool_test::Quote;

// Every file under `dir` with its bytes, and every directory (as "name/").
std::map<std::string, std::string> DirState(const std::string& dir) {
  std::map<std::string, std::string> state;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = e.path().lexically_relative(dir).string();
    if (e.is_directory()) {
      state[name + "/"] = "";
    } else {
      state[name] = ReadAll(e.path().string());
    }
  }
  return state;
}

// Runs strata with `args` on the engine directory `db` (shell syntax; the
// directory is appended, named as `dir_arg` when that is given), standard
// error joined to the output, after the shell commands `prefix` (a cd, say),
// and checks that the directory and what lies beside it did not change.
RunResult RunOn(const std::string& db, const std::string& args, const std::string& prefix = "",
                const std::string& dir_arg = "") {
  const std::string parent = std::filesystem::path(db).parent_path().string();
  const auto before = DirState(parent);
  RunResult r = test::RunCommand("{ " + prefix + " " + STRATA_CLI_TOOL + " " + args + " " +
                                 (dir_arg.empty() ? Quote(db) : dir_arg) + "; }");
  EXPECT_EQ(DirState(parent), before) << "strata " << args << " changed " << parent;
  return r;
}

// Sets or clears the immutable attribute of `path` (chattr): nothing, not
// even root, may add a name to an immutable directory or link an immutable
// file. False when the file system cannot (the tests that need it skip).
bool SetImmutable(const std::string& path, bool on) {
  return test::RunCommand(std::string("chattr ") + (on ? "+i " : "-i ") + Quote(path)).exit_code ==
         0;
}

// Clears the immutable attribute of its paths when it goes, so that the
// scratch directory can be removed whatever the test found.
struct ImmutableGuard {
  std::vector<std::string> paths;
  ~ImmutableGuard() {
    for (const std::string& p : paths) SetImmutable(p, /*on=*/false);
  }
};

// As RunOn, with standard error dropped: what the tool wrote to standard
// output alone, parsed as JSON.
Json RunJson(const std::string& db, const std::string& args, int want_exit = 0) {
  const std::string parent = std::filesystem::path(db).parent_path().string();
  const auto before = DirState(parent);
  int exit_code = -1;
  Json json = tool_test::RunJson(STRATA_CLI_TOOL, args + " " + Quote(db), &exit_code);
  EXPECT_EQ(DirState(parent), before) << "strata " << args << " changed " << parent;
  EXPECT_EQ(exit_code, want_exit) << args;
  return json;
}

// The member at `path` of nested objects (an array index as a number), or
// an empty value.
const Json& At(const Json& j, std::initializer_list<std::string> path) {
  static const Json kNone;
  const Json* at = &j;
  for (const std::string& key : path) {
    if (at->is_array()) {
      const size_t i = std::stoul(key);
      if (i >= at->elements().size()) return kNone;
      at = &at->elements()[i];
    } else {
      at = at->Find(key);
      if (at == nullptr) return kNone;
    }
  }
  return *at;
}
std::string TextAt(const Json& j, std::initializer_list<std::string> path) {
  return At(j, path).text();
}
// Whether `j` is an array with no elements (a missing member is not).
bool EmptyArray(const Json& j) { return j.is_array() && j.elements().empty(); }
// Whether `j` is the boolean false (a missing member is not).
bool False(const Json& j) { return j.type() == Json::Type::kBool && !j.boolean(); }

// ---------------------------------------------------------------------------
// get and scan on a plain table.

class StrataCliCellsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.use_io_uring = false;
    auto engine = Engine::Open(db_, options);
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("shop"));
    TableSchema schema;
    schema.locality_groups.push_back({.name = "blobs"});
    schema.families.push_back({.name = "meta"});
    schema.families.push_back({.name = "body", .locality_group = "blobs"});
    auto tenant = (*engine)->OpenTenant("shop");
    ASSERT_OK(tenant);
    ASSERT_OK(tenant->CreateTable("items", schema));
    auto table = tenant->OpenTable("items");
    ASSERT_OK(table);
    auto mutate = [&](const std::string& row, const RowMutation& m) {
      ASSERT_OK(table->Mutate(WriteOptions(), row, m));
    };
    // In table files: versions of apple's name and color, banana, cherry.
    mutate("apple", RowMutation()
                        .Put("meta", "name", 1, "Apple")
                        .Put("meta", "name", 2, "Apple Inc")
                        .Put("meta", "color", 1, "red")
                        .Put("meta", "color", 2, "green"));
    mutate("banana", RowMutation().Put("meta", "name", 1, "Banana").Put("body", "html", 1, "<b>"));
    mutate("cherry", RowMutation().Put("meta", "name", 1, "Cherry"));
    ASSERT_OK((*engine)->Flush());
    // In the log only: a newer version, a binary value and deletes of each
    // kind, and a row with a binary key.
    mutate("apple", RowMutation()
                        .Put("meta", "name", 3, "apple!")
                        .DeleteCell("meta", "color", 2)
                        .Put("body", "html", 5, kBinary));
    mutate("banana", RowMutation().DeleteColumn("meta", "name"));
    mutate("cherry", RowMutation().DeleteRow());
    mutate(std::string("k\0\1", 3), RowMutation().Put("meta", "name", 7, "bin"));
    ASSERT_OK((*engine)->Close());
  }

  RunResult Run(const std::string& args) { return RunOn(db_, args); }

  const std::string kBinary = std::string("<p>\x01\xff</p>", 9);
  test::ScratchDir dir_{"strata-cli-cells"};
  const std::string db_ = dir_.Join("db");
};

TEST_F(StrataCliCellsTest, GetShowsARowsVersionsWithoutDeletedOnes) {
  const std::string t = "--tenant=shop --table=items ";
  RunResult r = Run("get " + t + "--row=apple");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* want :
       {"table 'items' of tenant 'shop' (a snapshot of ", "'apple' meta:'color' @1 'red'\n",
        "'apple' meta:'name' @3 'apple!'\n'apple' meta:'name' @2 'Apple Inc'\n"
        "'apple' meta:'name' @1 'Apple'\n",
        "'apple' body:'html' @5 '<p>\\x01\\xff</p>'\n", "\n5 cells\n"}) {
    EXPECT_TRUE(Contains(r.out, want)) << want << "\n" << r.out;
  }
  EXPECT_FALSE(Contains(r.out, "green")) << r.out;  // its version was deleted

  r = Run("get " + t + "--row=apple --versions=1");
  EXPECT_TRUE(Contains(r.out, "@3 'apple!'")) << r.out;
  EXPECT_FALSE(Contains(r.out, "@2 'Apple Inc'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n3 cells\n")) << r.out;
  r = Run("get " + t + "--row=apple --family=body");
  EXPECT_TRUE(Contains(r.out, "body:'html' @5")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n1 cell\n")) << r.out;
  r = Run("get " + t + "--row=apple --column=name");  // in any family
  EXPECT_TRUE(Contains(r.out, "\n3 cells\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "color")) << r.out;
  r = Run("get " + t + "--row=apple --family=meta --column=color");
  EXPECT_TRUE(Contains(r.out, "'apple' meta:'color' @1 'red'\n1 cell\n")) << r.out;
  // Deleted by a column and by a row marker: nothing left.
  r = Run("get " + t + "--row=banana --family=meta");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n0 cells\n")) << r.out;
  r = Run("get " + t + "--row=cherry");
  EXPECT_TRUE(Contains(r.out, "\n0 cells\n")) << r.out;

  // Binary keys and values in hex, both ways.
  r = Run("get " + t + "--hex --row=6b0001");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "6b0001 meta:6e616d65 @7 62696e\n")) << r.out;
  r = Run("get " + t + "--hex --row=6170706c65 --family=body");
  EXPECT_TRUE(Contains(r.out, "6170706c65 body:68746d6c @5 3c703e01ff3c2f703e\n")) << r.out;
}

TEST_F(StrataCliCellsTest, ScanWalksRowRangesFamiliesAndLimits) {
  const std::string t = "--tenant=shop --table=items";
  RunResult r = Run("scan " + t);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "'banana' body:'html' @1 '<b>'\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "'k\\x00\\x01' meta:'name' @7 'bin'\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "cherry")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n7 cells in 3 rows\n")) << r.out;
  // Rows in order.
  EXPECT_LT(r.out.find("'apple'"), r.out.find("'banana'"));
  EXPECT_LT(r.out.find("'banana'"), r.out.find("'k\\x00"));

  r = Run("scan " + t + " --start=b --end=c");
  EXPECT_TRUE(Contains(r.out, "\n1 cell in 1 row\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "'apple'")) << r.out;
  r = Run("scan " + t + " --family=meta");
  EXPECT_FALSE(Contains(r.out, "'banana'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n5 cells in 2 rows\n")) << r.out;
  r = Run("scan " + t + " --versions=1");
  EXPECT_TRUE(Contains(r.out, "\n5 cells in 3 rows\n")) << r.out;
  r = Run("scan " + t + " --limit=1");
  EXPECT_TRUE(Contains(r.out, "\n5 cells in 1 row (stopped at --limit")) << r.out;
  r = Run("scan " + t + " --hex --start=6b");
  EXPECT_TRUE(Contains(r.out, "6b0001 meta:6e616d65 @7 62696e\n1 cell in 1 row\n")) << r.out;
}

TEST_F(StrataCliCellsTest, GetAndScanAsJson) {
  const std::string t = "--tenant=shop --table=items ";
  Json j = RunJson(db_, "get " + t + "--row=apple");
  EXPECT_EQ(TextAt(j, {"tenant"}), "shop");
  EXPECT_EQ(TextAt(j, {"row"}), "apple");
  EXPECT_EQ(At(j, {"row_hex"}).type(), Json::Type::kNull);  // printable: no hex
  ASSERT_EQ(At(j, {"cells"}).elements().size(), 5u);
  EXPECT_EQ(TextAt(j, {"cells", "1", "family"}), "meta");
  EXPECT_EQ(TextAt(j, {"cells", "1", "qualifier"}), "name");
  EXPECT_EQ(TextAt(j, {"cells", "1", "timestamp"}), "3");
  EXPECT_EQ(TextAt(j, {"cells", "1", "value"}), "apple!");
  EXPECT_EQ(At(j, {"cells", "1", "value_hex"}).type(), Json::Type::kNull);
  EXPECT_EQ(TextAt(j, {"cells", "4", "value"}), "<p>\\x01\\xff</p>");
  EXPECT_EQ(TextAt(j, {"cells", "4", "value_hex"}), "3c703e01ff3c2f703e");
  EXPECT_EQ(TextAt(j, {"cell_count"}), "5");
  // --hex: hex beside every byte string.
  j = RunJson(db_, "get " + t + "--hex --row=6170706c65 --family=meta --column=636f6c6f72");
  EXPECT_EQ(TextAt(j, {"cells", "0", "qualifier_hex"}), "636f6c6f72");
  EXPECT_EQ(TextAt(j, {"cells", "0", "value_hex"}), "726564");

  j = RunJson(db_, "scan " + t);
  ASSERT_EQ(At(j, {"rows"}).elements().size(), 3u);
  EXPECT_EQ(TextAt(j, {"rows", "0", "row"}), "apple");
  EXPECT_EQ(TextAt(j, {"rows", "2", "row"}), "k\\x00\\x01");
  EXPECT_EQ(TextAt(j, {"rows", "2", "row_hex"}), "6b0001");
  EXPECT_EQ(TextAt(j, {"rows", "2", "cells", "0", "value"}), "bin");
  EXPECT_EQ(TextAt(j, {"row_count"}), "3");
  EXPECT_EQ(TextAt(j, {"cell_count"}), "7");
  EXPECT_TRUE(False(At(j, {"limited"})));
  j = RunJson(db_, "scan " + t + "--limit=2");
  EXPECT_EQ(At(j, {"rows"}).elements().size(), 2u);
  EXPECT_TRUE(At(j, {"limited"}).boolean());
  // A command that fails before its document begins still prints one.
  j = RunJson(db_, "get --tenant=shop --table=nope --row=apple", /*want_exit=*/2);
  EXPECT_TRUE(Contains(TextAt(j, {"error"}), "nope")) << TextAt(j, {"error"});
}

TEST_F(StrataCliCellsTest, CatalogAndCheckAsJson) {
  Json j = RunJson(db_, "catalog --files");
  EXPECT_EQ(TextAt(j, {"tenants", "0", "name"}), "shop");
  EXPECT_EQ(TextAt(j, {"tenants", "0", "tables", "0", "name"}), "items");
  const Json& groups = At(j, {"tenants", "0", "tables", "0", "groups"});
  ASSERT_EQ(groups.elements().size(), 2u) << groups.elements().size();
  for (const Json& g : groups.elements()) {
    const bool blobs = TextAt(g, {"name"}) == "blobs";
    EXPECT_EQ(TextAt(g, {"families", "0", "name"}), blobs ? "body" : "meta");
  }
  const std::string files = TextAt(j, {"total", "files"});
  EXPECT_NE(files, "");
  EXPECT_NE(files, "0");
  EXPECT_FALSE(
      At(j, {"tenants", "0", "tables", "0", "tablets", "0", "groups", "0", "levels", "0", "files"})
          .elements()
          .empty());

  j = RunJson(db_, "check --deep");
  EXPECT_TRUE(At(j, {"ok"}).boolean());
  EXPECT_EQ(TextAt(j, {"files_checked"}), files);
  EXPECT_TRUE(EmptyArray(At(j, {"problems"})));

  // A damaged file: check says so in its document and exits 1.
  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("db/sst"))) {
    if (e.path().extension() == ".sst") tables.push_back(e.path().string());
  }
  ASSERT_FALSE(tables.empty());
  const std::string good = ReadAll(tables[0]);
  WriteAll(tables[0], good.substr(0, good.size() - 1));
  j = RunJson(db_, "check", /*want_exit=*/1);
  EXPECT_TRUE(False(At(j, {"ok"})));
  ASSERT_EQ(At(j, {"problems"}).elements().size(), 1u);
  EXPECT_TRUE(Contains(TextAt(j, {"problems", "0"}), "the manifest records")) << j.members().size();
}

// A table file cut short or with a flipped byte: the read fails with one
// line naming the damage, exit 1, and nothing is changed.
TEST_F(StrataCliCellsTest, DamagedTableFilesAreProblems) {
  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("db/sst"))) {
    if (e.path().extension() == ".sst") tables.push_back(e.path().string());
  }
  ASSERT_FALSE(tables.empty());
  std::map<std::string, std::string> good;
  for (const std::string& path : tables) {
    good[path] = ReadAll(path);
    std::string bad = good[path];
    bad[bad.size() / 4] ^= 0x40;  // in a data block
    WriteAll(path, bad);
  }
  RunResult r = Run("scan --tenant=shop --table=items");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "Corruption")) << r.out;
  for (const auto& [path, bytes] : good) WriteAll(path, bytes.substr(0, bytes.size() / 2));
  r = Run("scan --tenant=shop --table=items");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "Corruption")) << r.out;
  r = Run("get --tenant=shop --table=items --row=banana");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // The document, cut short or never begun, still parses and says why.
  Json j = RunJson(db_, "scan --tenant=shop --table=items", /*want_exit=*/1);
  EXPECT_TRUE(Contains(TextAt(j, {"error"}), "Corruption")) << TextAt(j, {"error"});
}

// A table file deleted from the directory: the read fails, exit 1 (a
// problem, not bad arguments), and the message names the directory's file,
// not the snapshot's.
TEST_F(StrataCliCellsTest, MissingTableFileIsAProblemNamedInTheDirectory) {
  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("db/sst"))) {
    if (e.path().extension() == ".sst") tables.push_back(e.path().string());
  }
  ASSERT_FALSE(tables.empty());
  for (const std::string& path : tables) std::filesystem::remove(path);
  RunResult r = Run("scan --tenant=shop --table=items");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, db_ + "/sst/")) << r.out;
  EXPECT_FALSE(Contains(r.out, ".strata-snapshot-")) << r.out;
  Json j = RunJson(db_, "scan --tenant=shop --table=items", /*want_exit=*/1);
  EXPECT_TRUE(Contains(TextAt(j, {"error"}), db_ + "/sst/")) << TextAt(j, {"error"});
}

// "db/" and "." name the directory itself: the snapshot is made beside it,
// never inside it. The directory is made immutable, so a snapshot made
// inside it would fail.
TEST_F(StrataCliCellsTest, SnapshotGoesBesideADirectoryNamedWithASlashOrDot) {
  ImmutableGuard guard;
  if (!SetImmutable(db_, /*on=*/true)) GTEST_SKIP() << "chattr +i is not available here";
  guard.paths.push_back(db_);
  const std::string t = "scan --tenant=shop --table=items";
  RunResult r = RunOn(db_, t, "cd " + Quote(dir_.path()) + " &&", "db/");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n7 cells in 3 rows\n")) << r.out;
  r = RunOn(db_, t, "cd " + Quote(db_) + " &&", ".");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n7 cells in 3 rows\n")) << r.out;
  r = RunOn(db_, t, "cd " + Quote(db_ + "/sst") + " &&", "../");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n7 cells in 3 rows\n")) << r.out;
}

// Table files that cannot be hard-linked (immutable ones here; another file
// system alike) are copied into the snapshot.
TEST_F(StrataCliCellsTest, TableFilesThatCannotBeLinkedAreCopied) {
  ImmutableGuard guard;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("db/sst"))) {
    if (!SetImmutable(e.path().string(), /*on=*/true)) GTEST_SKIP() << "no chattr +i here";
    guard.paths.push_back(e.path().string());
  }
  ASSERT_FALSE(guard.paths.empty());
  RunResult r = Run("scan --tenant=shop --table=items");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "'banana' body:'html' @1 '<b>'\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n7 cells in 3 rows\n")) << r.out;
}

// A file that cannot be copied into the snapshot (its writes limited to 512
// bytes here): exit 1, naming the directory, and nothing left behind; never
// a snapshot that opens with a file short.
TEST_F(StrataCliCellsTest, ACopyThatFailsFailsTheCommand) {
  RunResult r = RunOn(db_, "scan --tenant=shop --table=items", "trap '' XFSZ; ulimit -f 1;");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "strata: cannot snapshot " + db_ + ": copying " + db_ + "/"))
      << r.out;
  EXPECT_FALSE(Contains(r.out, "cells in")) << r.out;
}

TEST_F(StrataCliCellsTest, HelpAndBadArguments) {
  RunResult r = tool_test::Run(STRATA_CLI_TOOL, "--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"catalog",
                           "check",
                           "gc",
                           "notifications",
                           "get",
                           "scan",
                           "txn row",
                           "txn locks",
                           "--tenant=T",
                           "--table=X",
                           "--row=R",
                           "--family=F",
                           "--column=Q",
                           "--versions=N",
                           "--start=R",
                           "--end=R",
                           "--limit=N",
                           "--older-than=SECONDS",
                           "--rows=N",
                           "--files",
                           "--deep",
                           "--hex",
                           "--json",
                           "<name>_hex",
                           "exit status: 0 ok; 1"}) {
    EXPECT_TRUE(Contains(r.out, word)) << word;
  }
  const std::string t = " --tenant=shop --table=items";
  for (const std::string& args : std::vector<std::string>{
           std::string("get") + t, "get --tenant=shop --row=apple", "scan --row=apple" + t,
           "scan --versions=0" + t, "scan --limit=x" + t, "get --hex --row=zz" + t,
           "get --row=apple --family=" + t, "txn" + t, "txn frob" + t, "txn row" + t,
           "txn locks --row=a" + t, "txn locks --older-than=-1" + t, "catalog --hex",
           "get --row=a --row=b" + t, "scan --start=b --end=a" + t, "scan --json=1" + t}) {
    r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("strata: ", 0), 0u) << args << "\n" << r.out;
  }
  r = Run("scan --row=apple" + t);
  EXPECT_TRUE(Contains(r.out, "--row does not go with scan (it goes with get, txn row)")) << r.out;

  // A tenant, table or family that is not there.
  r = Run("get --tenant=shop --table=nope --row=apple");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "strata: NotFound")) << r.out;
  EXPECT_TRUE(Contains(r.out, "nope")) << r.out;
  r = Run("scan --tenant=nobody --table=items");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "nobody")) << r.out;
  r = Run("get --tenant=shop --table=items --row=apple --family=nope");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "nope")) << r.out;
  // A plain table is not transactional.
  r = Run("txn locks --tenant=shop --table=items");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "is not transactional")) << r.out;
  // Not an engine directory.
  r = RunOn(dir_.Join("db/sst"), "get --tenant=shop --table=items --row=apple");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "no MANIFEST")) << r.out;
}

// ---------------------------------------------------------------------------
// txn row and txn locks on a transactional table.

uint64_t RealNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr uint64_t kHourMicros = uint64_t{3600} * 1000 * 1000;
constexpr uint64_t kTtlMillis = 3600 * 1000;

class StrataCliTxnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.use_io_uring = false;
    auto engine = Engine::Open(db_, options);
    ASSERT_OK(engine);
    engine_ = std::move(engine).value();
    ASSERT_OK(engine_->CreateTenant("bank"));
    auto services = TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    auto tables = std::make_shared<test::EngineTables>(*engine_->OpenTenant("bank"));
    ASSERT_OK(tables->Create("accounts"));
    ASSERT_OK(tables->Create("broken"));
    ASSERT_OK(tables->Create("raw"));

    // Locks carry the wall time of this clock: hours ago, then now.
    clock_.SetWallMicros(RealNowMicros() - 3 * kHourMicros);
    txn::TxnDBConfig config;
    config.options.one_phase_commit = false;  // prewrites and locks
    config.options.commit_secondaries_in_background = false;
    config.options.observed_columns = {{"accounts", "bal"}};
    // An hour: a lock written now is not spent while the test runs.
    config.options.lock_ttl_millis = kTtlMillis;
    config.oracle = txn::TransactionServicesAccess::oracle(**services);
    config.registry = txn::TransactionServicesAccess::registry(**services);
    config.clock = &clock_;
    config.tables = tables;
    config.keep_alive = *services;
    config.single_log = true;
    config.fail_point = [this](txn::FailPoint p, uint64_t ts) {
      auto it = stop_.find(ts);
      return it != stop_.end() && it->second == p;
    };
    auto db = txn::TxnDB::Make(std::move(config));
    ASSERT_OK(db);
    db_handle_ = std::move(db).value();
  }

  void TearDown() override { Close(); }

  void Close() {
    if (db_handle_ != nullptr) {
      EXPECT_OK(db_handle_->Close());
    }
    db_handle_.reset();
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
    engine_.reset();
  }

  std::unique_ptr<Transaction> Begin() {
    auto t = db_handle_->Begin();
    EXPECT_OK(t);
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // Transactions of every outcome; their timestamps in the members below.
  void WriteHistory() {
    // alice and bob committed, alice's note too long to go inline.
    auto t1 = Begin();
    ASSERT_OK(t1->Set("accounts", "alice", "bal", "100"));
    ASSERT_OK(t1->Set("accounts", "bob", "bal", "50"));
    ASSERT_OK(t1->Set("accounts", "alice", "note", std::string(200, 'n')));
    ASSERT_OK(t1->Commit());
    t1_ = {t1->start_ts(), t1->commit_ts()};
    // bob erased.
    auto t2 = Begin();
    ASSERT_OK(t2->Erase("accounts", "bob", "bal"));
    ASSERT_OK(t2->Commit());
    t2_ = {t2->start_ts(), t2->commit_ts()};
    // carol: a coordinator stops after its prewrite; once the lock's TTL is
    // spent a reader rolls it back.
    auto t3 = Begin();
    stop_[t3->start_ts()] = txn::FailPoint::kAfterPrimaryPrewrite;
    ASSERT_OK(t3->Set("accounts", "carol", "bal", "7"));
    EXPECT_FALSE(t3->Commit().ok());
    t3_start_ = t3->start_ts();
    clock_.Advance(2 * kHourMicros);
    auto reader = Begin();
    EXPECT_EQ(reader->Get("accounts", "carol", "bal").status().code(), Status::Code::kNotFound);
    // An observer's run acknowledges alice's notification.
    const txn::TxnKey trigger{"accounts", "alice", "bal"};
    auto run = txn::TxnDBOf(*db_handle_)->BeginObserverRun(&trigger);
    ASSERT_OK(run);
    ASSERT_OK((*run)->Commit());
    ack_ = {(*run)->start_ts(), (*run)->commit_ts()};
    // dave and erin: a coordinator two hours ago stopped with every row
    // prewritten; frank: one stopped now.
    clock_.SetWallMicros(RealNowMicros() - 2 * kHourMicros);
    auto t4 = Begin();
    stop_[t4->start_ts()] = txn::FailPoint::kAfterCommitTs;
    ASSERT_OK(t4->Set("accounts", "dave", "bal", "1"));
    ASSERT_OK(t4->Set("accounts", "erin", "bal", std::string(300, 'e')));
    EXPECT_FALSE(t4->Commit().ok());
    t4_start_ = t4->start_ts();
    clock_.SetWallMicros(RealNowMicros());
    auto t5 = Begin();
    stop_[t5->start_ts()] = txn::FailPoint::kAfterPrimaryPrewrite;
    ASSERT_OK(t5->Set("accounts", "frank", "bal", "3"));
    EXPECT_FALSE(t5->Commit().ok());
    t5_start_ = t5->start_ts();
  }

  RunResult Run(const std::string& args) { return RunOn(db_, args); }

  test::ScratchDir dir_{"strata-cli-txn"};
  const std::string db_ = dir_.Join("db");
  test::FakeClock clock_;
  std::map<uint64_t, txn::FailPoint> stop_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TransactionDB> db_handle_;
  std::pair<uint64_t, uint64_t> t1_, t2_, ack_;  // start_ts, commit_ts
  uint64_t t3_start_ = 0, t4_start_ = 0, t5_start_ = 0;
};

TEST_F(StrataCliTxnTest, RowShowsEachColumnsHistoryDecoded) {
  ASSERT_NO_FATAL_FAILURE(WriteHistory());
  Close();
  const std::string t = "--tenant=bank --table=accounts ";
  RunResult r = Run("txn row " + t + "--row=alice");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto ts = [](uint64_t n) { return std::to_string(n) + " (20"; };  // the number, then UTC
  for (const std::string& want : std::vector<std::string>{
           std::string("row 'alice' of table 'accounts' of tenant 'bank' (a snapshot of "),
           "column 'bal':\n",
           // The observer's run committed a lock record above the put.
           "  write commit_ts " + ts(ack_.second), ": lock of start_ts " + ts(ack_.first),
           "  write commit_ts " + ts(t1_.second), ": put of start_ts " + ts(t1_.first),
           "value '100' (inline)\n", "  ack " + ts(ack_.first), "column 'note':\n",
           "value '" + std::string(200, 'n') + "' (data)\n",
           "2 columns, 0 locks, 3 write records\n"}) {
    EXPECT_TRUE(Contains(r.out, want)) << want << "\n" << r.out;
  }
  EXPECT_FALSE(Contains(r.out, "notification ")) << r.out;  // acknowledged, so erased

  r = Run("txn row " + t + "--row=bob");
  EXPECT_TRUE(Contains(r.out, "  write commit_ts " + ts(t2_.second))) << r.out;
  EXPECT_TRUE(Contains(r.out, ": delete of start_ts " + ts(t2_.first))) << r.out;
  EXPECT_TRUE(Contains(r.out, "  notification " + ts(t2_.second))) << r.out;
  EXPECT_TRUE(Contains(r.out, "  notification " + ts(t1_.second))) << r.out;

  r = Run("txn row " + t + "--row=carol");
  EXPECT_TRUE(Contains(r.out, "  write at " + ts(t3_start_))) << r.out;
  EXPECT_TRUE(Contains(r.out, ": rollback of start_ts " + std::to_string(t3_start_) +
                                  ", by a lock resolver or its coordinator\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "0 locks, 1 write record\n")) << r.out;

  // --column picks one column; --hex reads and prints keys as hex.
  r = Run("txn row " + t + "--row=alice --column=note");
  EXPECT_FALSE(Contains(r.out, "column 'bal'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 column, 0 locks, 1 write record\n")) << r.out;
  r = Run("txn row " + t + "--hex --row=616c696365 --column=62616c");
  EXPECT_TRUE(Contains(r.out, "row 616c696365 of table")) << r.out;
  EXPECT_TRUE(Contains(r.out, "column 62616c:\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "value 313030 (inline)")) << r.out;

  // As JSON.
  Json j = RunJson(db_, "txn row " + t + "--row=alice");
  ASSERT_EQ(At(j, {"columns"}).elements().size(), 2u);
  const Json& bal = At(j, {"columns", "0"});
  EXPECT_EQ(TextAt(bal, {"column"}), "bal");
  EXPECT_TRUE(EmptyArray(At(bal, {"locks"})));
  ASSERT_EQ(At(bal, {"writes"}).elements().size(), 2u);
  EXPECT_EQ(TextAt(bal, {"writes", "0", "kind"}), "lock");
  EXPECT_EQ(TextAt(bal, {"writes", "1", "kind"}), "put");
  EXPECT_EQ(TextAt(bal, {"writes", "1", "commit_ts"}), std::to_string(t1_.second));
  EXPECT_EQ(TextAt(bal, {"writes", "1", "start_ts"}), std::to_string(t1_.first));
  EXPECT_TRUE(Contains(TextAt(bal, {"writes", "1", "start_ts_time"}), " UTC"));
  EXPECT_EQ(TextAt(bal, {"writes", "1", "value"}), "100");
  EXPECT_EQ(TextAt(bal, {"writes", "1", "value_in"}), "inline");
  EXPECT_EQ(TextAt(bal, {"acks", "0", "ts"}), std::to_string(ack_.first));
  EXPECT_TRUE(EmptyArray(At(bal, {"notifications"})));
  EXPECT_EQ(TextAt(j, {"columns", "1", "writes", "0", "value_in"}), "data");
  EXPECT_TRUE(EmptyArray(At(j, {"damaged"})));
  j = RunJson(db_, "txn row " + t + "--row=carol");
  EXPECT_EQ(TextAt(j, {"columns", "0", "writes", "0", "kind"}), "rollback");
  EXPECT_EQ(TextAt(j, {"columns", "0", "writes", "0", "rollback_ts"}), std::to_string(t3_start_));
  EXPECT_EQ(At(j, {"columns", "0", "writes", "0", "rolled_back_by"}).type(), Json::Type::kNull);
  EXPECT_NE(At(j, {"columns", "0", "writes", "0"}).Find("rolled_back_by"), nullptr);
  EXPECT_EQ(At(j, {"columns", "0", "writes", "0", "value_in"}).type(), Json::Type::kNull);
}

TEST_F(StrataCliTxnTest, LocksOfStoppedCoordinators) {
  ASSERT_NO_FATAL_FAILURE(WriteHistory());
  const std::string t = "--tenant=bank --table=accounts ";
  // While the engine has the directory open (the locks only in its log).
  RunResult r = Run("txn locks " + t);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "3 locks (of 3 in the table)\n")) << r.out;
  Close();

  r = Run("txn locks " + t);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'dave' column 'bal': start_ts " + std::to_string(t4_start_)))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'erin' column 'bal': start_ts " + std::to_string(t4_start_)))
      << r.out;
  EXPECT_TRUE(
      Contains(r.out, "row 'frank' column 'bal': start_ts " + std::to_string(t5_start_) + " (20"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, ", ttl 3600000 ms (spent), ")) << r.out;
  EXPECT_TRUE(Contains(r.out, ", ttl 3600000 ms (not spent), ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "3 locks (of 3 in the table)\n")) << r.out;
  // Only the two hours old ones.
  r = Run("txn locks " + t + "--older-than=3600");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'dave'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "row 'erin'")) << r.out;
  EXPECT_FALSE(Contains(r.out, "row 'frank'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "2 locks at least 3600 s old (of 3 in the table)\n")) << r.out;
  r = Run("txn locks " + t + "--older-than=36000");
  EXPECT_TRUE(Contains(r.out, "0 locks at least 36000 s old (of 3 in the table)\n")) << r.out;
  r = Run("txn locks " + t + "--limit=1");
  EXPECT_TRUE(Contains(r.out, "  ... 2 more\n3 locks")) << r.out;

  Json j = RunJson(db_, "txn locks " + t + "--older-than=3600");
  const Json& locks = At(j, {"locks"});
  ASSERT_EQ(locks.elements().size(), 2u);
  EXPECT_EQ(TextAt(j, {"locks_total"}), "3");
  EXPECT_EQ(TextAt(j, {"locks_old_enough"}), "2");
  int primaries = 0;
  for (const Json& lock : locks.elements()) {
    EXPECT_EQ(TextAt(lock, {"start_ts"}), std::to_string(t4_start_));
    EXPECT_EQ(TextAt(lock, {"kind"}), "put");
    EXPECT_EQ(TextAt(lock, {"column"}), "bal");
    EXPECT_EQ(TextAt(lock, {"primary", "table"}), "accounts");
    EXPECT_EQ(TextAt(lock, {"primary", "column"}), "bal");
    const std::string primary = TextAt(lock, {"primary", "row"});
    EXPECT_TRUE(primary == "dave" || primary == "erin") << primary;
    EXPECT_EQ(At(lock, {"is_primary"}).boolean(), primary == TextAt(lock, {"row"}));
    primaries += At(lock, {"is_primary"}).boolean() ? 1 : 0;
    EXPECT_GE(std::stoll(TextAt(lock, {"age_millis"})), 7000 * 1000)
        << TextAt(lock, {"age_millis"});
    EXPECT_TRUE(At(lock, {"ttl_spent"}).boolean());
    EXPECT_EQ(TextAt(lock, {"ttl_millis"}), std::to_string(kTtlMillis));
    EXPECT_GT(std::stoull(TextAt(lock, {"min_commit_ts"})), t4_start_);
    EXPECT_NE(TextAt(lock, {"owner", "instance"}), "0");
  }
  EXPECT_EQ(primaries, 1);
  EXPECT_EQ(TextAt(locks, {"0", "row"}), "dave");
  EXPECT_EQ(TextAt(locks, {"0", "value"}), "1");  // inline in the lock
  EXPECT_EQ(TextAt(locks, {"0", "value_in"}), "inline");
  // erin's value is too long to go inline: read from the data family, as
  // txn row does.
  EXPECT_EQ(TextAt(locks, {"1", "row"}), "erin");
  EXPECT_EQ(TextAt(locks, {"1", "value"}), std::string(300, 'e'));
  EXPECT_EQ(TextAt(locks, {"1", "value_in"}), "data");
  r = Run("txn locks " + t + "--older-than=3600");
  EXPECT_TRUE(Contains(r.out, "value '" + std::string(300, 'e') + "' (data)")) << r.out;
  // The secondary of the two: its transaction's state is its primary's.
  EXPECT_TRUE(Contains(r.out, "; primary locked: age ")) << r.out;
  for (const Json& lock : locks.elements()) {
    EXPECT_EQ(TextAt(lock, {"primary_state"}), "locked");
    EXPECT_TRUE(At(lock, {"primary_ttl_spent"}).boolean());
    EXPECT_EQ(TextAt(lock, {"primary_ttl_millis"}), std::to_string(kTtlMillis));
    EXPECT_NE(TextAt(lock, {"primary_owner", "instance"}), "0");
  }
  // --hex is for keys, columns and values; the primary's table is a table
  // name, escaped as every other.
  j = RunJson(db_, "txn locks " + t + "--hex --older-than=3600");
  EXPECT_EQ(TextAt(j, {"locks", "0", "primary", "table"}), "accounts");
  EXPECT_EQ(At(j, {"locks", "0", "primary"}).Find("table_hex"), nullptr);
  EXPECT_EQ(TextAt(j, {"locks", "0", "primary", "column_hex"}), "62616c");
  r = Run("txn locks " + t + "--hex --older-than=3600");
  EXPECT_TRUE(Contains(r.out, "primary 'accounts'/")) << r.out;

  // txn row shows the lock with its value, inline or from the data family.
  r = Run("txn row " + t + "--row=erin");
  EXPECT_TRUE(Contains(r.out, "  lock: start_ts " + std::to_string(t4_start_))) << r.out;
  EXPECT_TRUE(Contains(r.out, "value '" + std::string(300, 'e') + "' (data)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 column, 1 lock, 0 write records\n")) << r.out;
  j = RunJson(db_, "txn row " + t + "--row=frank");
  EXPECT_EQ(TextAt(j, {"columns", "0", "locks", "0", "start_ts"}), std::to_string(t5_start_));
  EXPECT_TRUE(False(At(j, {"columns", "0", "locks", "0", "ttl_spent"})));
  EXPECT_TRUE(At(j, {"columns", "0", "locks", "0", "is_primary"}).boolean());
  EXPECT_EQ(TextAt(j, {"columns", "0", "locks", "0", "primary_state"}), "locked");
  EXPECT_TRUE(False(At(j, {"columns", "0", "locks", "0", "primary_ttl_spent"})));
}

// A secondary lock shows its transaction's state as its primary says it:
// locked (above), committed, rolled back, not prewritten, or in a table that
// is not there.
TEST_F(StrataCliTxnTest, SecondaryLocksShowTheirPrimarysState) {
  ASSERT_NO_FATAL_FAILURE(WriteHistory());
  // A coordinator stopped once its primary committed: the other row keeps
  // its lock.
  auto t6 = Begin();
  stop_[t6->start_ts()] = txn::FailPoint::kAfterPrimaryCommit;
  ASSERT_OK(t6->Set("accounts", "gail", "bal", "4"));
  ASSERT_OK(t6->Set("accounts", "hank", "bal", "5"));
  EXPECT_FALSE(t6->Commit().ok());
  const uint64_t t6_start = t6->start_ts();
  // Locks written through the row store, whose primaries are rolled back,
  // have no lock or record, and are in a table that is not there.
  {
    Result<Table> raw = engine_->OpenTenant("bank")->OpenTable("raw");
    ASSERT_OK(raw);
    auto lock = [&](uint64_t start_ts, const std::string& table, const std::string& row) {
      txn::LockRecord l;
      l.start_ts = start_ts;
      l.wall_millis = RealNowMicros() / 1000;
      l.ttl_millis = kTtlMillis;
      l.min_commit_ts = start_ts + 1;
      l.primary_table = table;
      l.primary_row = row;
      l.primary_column = "c";
      l.has_inline_value = true;
      l.inline_value = "v";
      return txn::EncodeLock(l);
    };
    txn::WriteRecord rollback;
    rollback.kind = txn::WriteKind::kRollback;
    rollback.start_ts = 30;
    RowMutation m;
    m.Put(std::string(txn::kLockFamily), "back", 30, lock(30, "raw", "q"));
    m.Put(std::string(txn::kLockFamily), "none", 31, lock(31, "raw", "r"));
    m.Put(std::string(txn::kLockFamily), "gone", 32, lock(32, "nosuch", "q"));
    ASSERT_OK(raw->Mutate(WriteOptions(), "p", m));
    ASSERT_OK(raw->Mutate(
        WriteOptions(), "q",
        RowMutation().Put(std::string(txn::kWriteFamily), "c", 30, txn::EncodeWrite(rollback))));
  }
  Close();

  const std::string t = "--tenant=bank --table=accounts ";
  Json j = RunJson(db_, "txn locks " + t);
  const Json* t6_lock = nullptr;
  for (const Json& lock : At(j, {"locks"}).elements()) {
    if (TextAt(lock, {"start_ts"}) == std::to_string(t6_start)) t6_lock = &lock;
  }
  ASSERT_NE(t6_lock, nullptr);
  EXPECT_TRUE(False(At(*t6_lock, {"is_primary"})));
  EXPECT_EQ(TextAt(*t6_lock, {"primary_state"}), "committed");
  const std::string commit_ts = TextAt(*t6_lock, {"primary_commit_ts"});
  ASSERT_FALSE(commit_ts.empty());
  EXPECT_GT(std::stoull(commit_ts), t6_start);
  EXPECT_TRUE(Contains(TextAt(*t6_lock, {"primary_commit_ts_time"}), " UTC"));
  const std::string row = TextAt(*t6_lock, {"row"});
  RunResult r = Run("txn row " + t + "--row=" + row);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "; primary committed at commit_ts " + commit_ts + " (20")) << r.out;
  EXPECT_TRUE(Contains(r.out, ": a reader rolls this lock forward\n")) << r.out;

  r = Run("txn locks --tenant=bank --table=raw");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "; primary rolled back: a reader rolls this lock back\n")) << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "; primary has no lock or record of start_ts 31 (not prewritten "
                       "yet): this lock's ttl is not spent\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "; primary's table is not there: NotFound")) << r.out;
  j = RunJson(db_, "txn locks --tenant=bank --table=raw");
  std::map<std::string, std::string> states;
  for (const Json& lock : At(j, {"locks"}).elements()) {
    states[TextAt(lock, {"column"})] = TextAt(lock, {"primary_state"});
  }
  EXPECT_EQ(states, (std::map<std::string, std::string>{
                        {"back", "rolled_back"}, {"none", "no_record"}, {"gone", "table_gone"}}));
}

// Lock and write cells that do not decode, written through the row store:
// shown as damaged, exit 1; and a plain table or a missing one is refused.
TEST_F(StrataCliTxnTest, DamagedRecordsAndWrongTables) {
  {
    Result<Table> broken = engine_->OpenTenant("bank")->OpenTable("broken");
    ASSERT_OK(broken);
    RowMutation m;
    m.Put(std::string(txn::kLockFamily), "c", 5, std::string("\x01\x01\x00\x05", 4));  // cut short
    m.Put(std::string(txn::kWriteFamily), "c", 9, std::string("\x01\x09", 2));
    ASSERT_OK(broken->Mutate(WriteOptions(), "zed", m));
    // A put whose data cell is missing, and a rollback by an older
    // transaction (start_ts 11) that took the lock.
    txn::WriteRecord put;
    put.kind = txn::WriteKind::kPut;
    put.start_ts = 15;
    txn::WriteRecord rollback;
    rollback.kind = txn::WriteKind::kRollback;
    rollback.start_ts = 12;
    rollback.rolled_back_by = 11;
    ASSERT_OK(broken->Mutate(
        WriteOptions(), "yan",
        RowMutation()
            .Put(std::string(txn::kWriteFamily), "v", 20, txn::EncodeWrite(put))
            .Put(std::string(txn::kWriteFamily), "v", 12, txn::EncodeWrite(rollback))));
    TableSchema plain;
    plain.families.push_back({.name = "f"});
    ASSERT_OK(engine_->OpenTenant("bank")->CreateTable("plain", plain));
  }
  Close();
  RunResult r = Run("txn row --tenant=bank --table=broken --row=zed");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "  DAMAGED lock record of row 'zed' column 'c' at 5: Corruption"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "  DAMAGED write record of row 'zed' column 'c' at 9: ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "strata: 2 records cannot be decoded\n")) << r.out;
  r = Run("txn locks --tenant=bank --table=broken");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "0 locks (of 1 in the table)\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "DAMAGED lock record of row 'zed'")) << r.out;
  Json j = RunJson(db_, "txn locks --tenant=bank --table=broken", /*want_exit=*/1);
  EXPECT_EQ(TextAt(j, {"damaged", "0", "row"}), "zed");
  EXPECT_EQ(TextAt(j, {"damaged", "0", "value_hex"}), "01010005");
  EXPECT_TRUE(Contains(TextAt(j, {"damaged", "0", "error"}), "Corruption"));

  r = Run("txn row --tenant=bank --table=broken --row=yan");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, ": put of start_ts 15 (")) << r.out;
  EXPECT_TRUE(Contains(r.out, ", value missing (no data cell)\n")) << r.out;
  EXPECT_TRUE(Contains(r.out,
                       ": rollback of start_ts 12, by the transaction at start_ts 11 to "
                       "take its lock\n"))
      << r.out;
  j = RunJson(db_, "txn row --tenant=bank --table=broken --row=yan");
  const Json& writes = At(j, {"columns", "0", "writes"});
  ASSERT_EQ(writes.elements().size(), 2u);
  EXPECT_EQ(TextAt(writes, {"0", "value_in"}), "missing");
  EXPECT_EQ(At(writes, {"0"}).Find("value"), nullptr);
  EXPECT_EQ(TextAt(writes, {"1", "kind"}), "rollback");
  EXPECT_EQ(TextAt(writes, {"1", "rolled_back_by"}), "11");
  EXPECT_TRUE(Contains(TextAt(writes, {"1", "rolled_back_by_time"}), " UTC"));

  r = Run("txn row --tenant=bank --table=plain --row=zed");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "strata: InvalidArgument: table plain of tenant bank is not "
                       "transactional"))
      << r.out;
  r = Run("txn locks --tenant=bank --table=missing");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "strata: NotFound")) << r.out;
  r = Run("notifications --tenant=bank --table=plain");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

// A table file damaged that the engine reads only when asked (not one of
// the in-memory lock and notify groups, which its open loads): erin's lock
// names a value in the data family, so txn locks fails part way, its
// document still valid JSON, with what it began and an "error" member.
TEST_F(StrataCliTxnTest, LocksReadFailingPartWayEndsTheDocument) {
  ASSERT_NO_FATAL_FAILURE(WriteHistory());
  ASSERT_OK(engine_->Flush());
  Close();
  const std::string t = "--tenant=bank --table=accounts ";
  // Which file holds the data family is the engine's business: damage one
  // file at a time until the document is cut short.
  bool cut = false;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Join("db/sst"))) {
    const std::string path = e.path().string();
    const std::string good = ReadAll(path);
    std::string bad = good;
    bad[bad.size() / 4] ^= 0x40;  // in a data block
    WriteAll(path, bad);
    int code = 0;
    Json j = tool_test::RunJson(STRATA_CLI_TOOL, "txn locks " + t + Quote(db_), &code);
    if (At(j, {"locks"}).is_array() && !TextAt(j, {"error"}).empty()) {
      cut = true;
      EXPECT_EQ(code, 1);
      EXPECT_EQ(TextAt(j, {"table"}), "accounts");
      EXPECT_TRUE(Contains(TextAt(j, {"error"}), "Corruption")) << TextAt(j, {"error"});
      break;
    }
    WriteAll(path, good);
  }
  EXPECT_TRUE(cut) << "no damaged file cut the document of txn locks short";
}

}  // namespace
}  // namespace strata
