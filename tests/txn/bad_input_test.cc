// Bad input, everywhere: one table of the public calls (engine, tenant, table,
// read session, transactions, garbage collector, observer worker) and the bad
// inputs each can get (empty, oversized, unknown, out of range, closed,
// dropped). Every entry must come back with the documented error code, a
// message that says what was wrong in at most a few hundred bytes (never the
// caller's whole input), and nothing changed: the tenants, their options,
// the tables, their schemas and every cell of every table are the same
// before and after.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/observer.h"
#include "strata/transaction.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

constexpr size_t kMaxMessage = 400;     // bytes an error message may take
const std::string kHuge(1 << 20, 'h');  // 1 MiB

TableSchema TwoGroups() {
  TableSchema s;
  s.locality_groups = {{.name = "g1"}, {.name = "g2"}};
  s.families = {{.name = "a", .locality_group = "g1"}, {.name = "b", .locality_group = "g2"}};
  return s;
}

RowMutation PutA(std::string_view qualifier = "q", std::string_view value = "v", uint64_t ts = 1) {
  RowMutation m;
  m.Put("a", qualifier, ts, value);
  return m;
}

// The engine with what the calls may not change: tenant "t" (weight 3) with
// table "tab" holding rows, a transactional table "tx" with a committed
// value, and a collector; table "gone" was dropped, its handle kept.
class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Open();
    Tenant t = *engine_->OpenTenant("t");
    ASSERT_OK(t.CreateTable("tab", TwoGroups()));
    ASSERT_OK(t.CreateTable("gone", TwoGroups()));
    gone_ = *t.OpenTable("gone");
    ASSERT_OK(t.DropTable("gone"));
    table_ = *t.OpenTable("tab");
    for (const char* row : {"r1", "r2", "r3"}) {
      RowMutation m = PutA();
      m.Put("b", "z", 5, std::string("b of ") + row);
      ASSERT_OK(table_.Mutate(WriteOptions(), row, m));
    }
    ASSERT_OK(db_->CreateTable("tx"));
    auto txn = db_->Begin();
    ASSERT_OK(txn);
    ASSERT_OK((*txn)->Set("tx", "k", "c", "committed"));
    ASSERT_OK((*txn)->Commit());
    before_ = Fingerprint();
  }

  void Open() {
    auto e = Engine::Open(dir_.Join("db"));
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    auto s = TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(s);
    services_ = *s;
    if (!engine_->OpenTenant("t").ok()) {
      ASSERT_OK(engine_->CreateTenant("t", TenantOptions{.write_buffer_weight = 3}));
    }
    auto db = TransactionDB::Open(services_, *engine_->OpenTenant("t"));
    ASSERT_OK(db);
    db_ = std::move(db.value());
    GcOptions go;
    go.interval_millis = 0;
    auto gc = GarbageCollector::Open(services_, db_.get(), go);
    ASSERT_OK(gc);
    gc_ = std::move(gc.value());
  }

  void TearDown() override {
    if (gc_ != nullptr) {
      EXPECT_OK(gc_->Close());
    }
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  // Everything a bad call must leave as it was, as text.
  std::string Fingerprint() {
    std::string out;
    auto tenants = engine_->ListTenants();
    EXPECT_OK(tenants);
    for (const std::string& name : *tenants) {
      out += "tenant " + name;
      auto o = engine_->GetTenantOptions(name);
      if (o.ok()) out += " weight " + std::to_string(o->write_buffer_weight);
      out += "\n";
      Tenant t = *engine_->OpenTenant(name);
      const std::vector<std::string> tables = *t.ListTables();
      for (const std::string& tname : tables) {
        Table table = *t.OpenTable(tname);
        TableSchema s = *table.GetSchema();
        out += " table " + tname + ":";
        for (const auto& g : s.locality_groups) out += " group " + g.name;
        for (const auto& f : s.families) out += " family " + f.name + "@" + f.locality_group;
        out += "\n";
        auto it = table.Scan(ReadOptions(), ScanSpec());
        EXPECT_OK(it);
        for (; (*it)->Valid(); (*it)->Next()) {
          for (const Cell& c : (*it)->cells()) {
            out += "  " + std::string((*it)->row()) + " " + c.family + ":" + c.qualifier + "@" +
                   std::to_string(c.timestamp) + "=" + std::to_string(c.value.size()) + "\n";
          }
        }
        EXPECT_OK((*it)->status());
      }
    }
    return out;
  }

  struct Entry {
    std::string call;
    std::string input;
    Status::Code code;
    std::function<Status()> run;
  };

  // Runs every entry and checks its answer and that nothing changed.
  void Check(const std::vector<Entry>& entries) {
    for (const Entry& e : entries) {
      SCOPED_TRACE(e.call + " with " + e.input);
      const Status s = e.run();
      EXPECT_EQ(s.code(), e.code) << s.ToString();
      EXPECT_FALSE(s.message().empty());
      EXPECT_LE(s.ToString().size(), kMaxMessage) << s.ToString().substr(0, 2 * kMaxMessage);
      EXPECT_EQ(Fingerprint(), before_);
    }
  }

  test::ScratchDir dir_{"bad_input"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<TransactionDB> db_;
  std::unique_ptr<GarbageCollector> gc_;
  Table table_;
  Table gone_;
  std::string before_;
};

using Code = Status::Code;

class NoopObserver final : public Observer {
 public:
  Status Process(Transaction*, std::string_view, std::string_view, std::string_view) override {
    return Status::OK();
  }
};

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

TEST_F(BadInputTest, EngineAndTenantCalls) {
  Engine& e = *engine_;
  Tenant t = *e.OpenTenant("t");
  TableSchema no_families;
  no_families.locality_groups = {{.name = "g1"}};
  TableSchema unknown_group = TwoGroups();
  unknown_group.families[1].locality_group = "nope";
  TableSchema duplicate_family = TwoGroups();
  duplicate_family.families[1].name = "a";
  TableSchema reordered = TwoGroups();
  std::swap(reordered.families[0], reordered.families[1]);
  TableSchema without_a = TwoGroups();
  without_a.families.erase(without_a.families.begin());
  EngineOptions bad_options;
  bad_options.max_value_size = 0;
  test::WriteAll(dir_.Join("a-file"), "x");
  Check({
      {"Engine::Open", "a directory that is a file", Code::kIOError,
       [&] { return StatusOf(Engine::Open(dir_.Join("a-file"))); }},
      {"Engine::Open", "max_value_size 0", Code::kInvalidArgument,
       [&] { return StatusOf(Engine::Open(dir_.Join("other"), bad_options)); }},
      {"Engine::Open", "a directory in use", Code::kBusy,
       [&] { return StatusOf(Engine::Open(dir_.Join("db"))); }},
      {"CreateTenant", "empty name", Code::kInvalidArgument, [&] { return e.CreateTenant(""); }},
      {"CreateTenant", "a slash in the name", Code::kInvalidArgument,
       [&] { return e.CreateTenant("a/b"); }},
      {"CreateTenant", "65-byte name", Code::kInvalidArgument,
       [&] { return e.CreateTenant(std::string(65, 'n')); }},
      {"CreateTenant", "1 MiB name", Code::kInvalidArgument, [&] { return e.CreateTenant(kHuge); }},
      {"CreateTenant", "a taken name", Code::kAlreadyExists, [&] { return e.CreateTenant("t"); }},
      {"CreateTenant", "weight 0", Code::kInvalidArgument,
       [&] { return e.CreateTenant("u", TenantOptions{.write_buffer_weight = 0}); }},
      {"CreateTenant", "weight 10001", Code::kInvalidArgument,
       [&] { return e.CreateTenant("u", TenantOptions{.write_buffer_weight = 10001}); }},
      {"SetTenantOptions", "unknown tenant", Code::kNotFound,
       [&] { return e.SetTenantOptions("nope", TenantOptions()); }},
      {"SetTenantOptions", "1 MiB name", Code::kNotFound,
       [&] { return e.SetTenantOptions(kHuge, TenantOptions()); }},
      {"SetTenantOptions", "weight 0", Code::kInvalidArgument,
       [&] { return e.SetTenantOptions("t", TenantOptions{.write_buffer_weight = 0}); }},
      {"GetTenantOptions", "unknown tenant", Code::kNotFound,
       [&] { return StatusOf(e.GetTenantOptions("nope")); }},
      {"OpenTenant", "unknown tenant", Code::kNotFound,
       [&] { return StatusOf(e.OpenTenant("nope")); }},
      {"OpenTenant", "empty name", Code::kNotFound, [&] { return StatusOf(e.OpenTenant("")); }},
      {"OpenTenant", "1 MiB name", Code::kNotFound, [&] { return StatusOf(e.OpenTenant(kHuge)); }},
      {"DropTenant", "unknown tenant", Code::kNotFound, [&] { return e.DropTenant("nope"); }},
      {"DropTenant", "1 MiB name", Code::kNotFound, [&] { return e.DropTenant(kHuge); }},
      {"CreateTable", "empty name", Code::kInvalidArgument,
       [&] { return t.CreateTable("", TwoGroups()); }},
      {"CreateTable", "1 MiB name", Code::kInvalidArgument,
       [&] { return t.CreateTable(kHuge, TwoGroups()); }},
      {"CreateTable", "a taken name", Code::kAlreadyExists,
       [&] { return t.CreateTable("tab", TwoGroups()); }},
      {"CreateTable", "no families", Code::kInvalidArgument,
       [&] { return t.CreateTable("new", no_families); }},
      {"CreateTable", "a family in an unknown group", Code::kInvalidArgument,
       [&] { return t.CreateTable("new", unknown_group); }},
      {"CreateTable", "two families of one name", Code::kInvalidArgument,
       [&] { return t.CreateTable("new", duplicate_family); }},
      {"AlterTable", "unknown table", Code::kNotFound,
       [&] { return t.AlterTable("nope", TwoGroups()); }},
      {"AlterTable", "reordered families", Code::kInvalidArgument,
       [&] { return t.AlterTable("tab", reordered); }},
      {"AlterTable", "removing a family that holds data", Code::kFailedPrecondition,
       [&] { return t.AlterTable("tab", without_a); }},
      {"OpenTable", "unknown table", Code::kNotFound,
       [&] { return StatusOf(t.OpenTable("nope")); }},
      {"OpenTable", "1 MiB name", Code::kNotFound, [&] { return StatusOf(t.OpenTable(kHuge)); }},
      {"DropTable", "unknown table", Code::kNotFound, [&] { return t.DropTable("nope"); }},
      {"DropTable", "1 MiB name", Code::kNotFound, [&] { return t.DropTable(kHuge); }},
  });
}

TEST_F(BadInputTest, TableCalls) {
  Table& tab = table_;
  RowFilter unknown_family;
  unknown_family.families = {"nope"};
  RowFilter inverted;
  inverted.min_timestamp = 9;
  inverted.max_timestamp = 2;
  ScanSpec backwards;
  backwards.start_row = "z";
  backwards.end_row = "a";
  ScanSpec scan_unknown;
  scan_unknown.filter = unknown_family;
  ReadSessionOptions inverted_session;
  inverted_session.min_timestamp = 9;
  inverted_session.max_timestamp = 2;
  ReadSessionOptions no_versions;
  no_versions.max_versions = 0;
  RowMutation unknown_fam;
  unknown_fam.Put("nope", "q", 1, "v");
  const Condition bad_range = Condition::NoCellInRange("a", "q", 9, 2);
  const Condition unknown_cond = Condition::CellExists("nope", "q", 1);
  auto session = tab.NewReadSession();
  ASSERT_OK(session);
  EXPECT_EQ(tab.GetLimits().max_row_key_size, EngineOptions().max_row_key_size);
  EXPECT_EQ(tab.GetLimits().max_value_size, EngineOptions().max_value_size);
  std::vector<ConditionalMutation> same_row = {{"r1", {}, PutA()}, {"r1", {}, PutA()}};
  std::vector<ConditionalMutation> one_bad = {{"r1", {}, PutA()}, {"", {}, PutA()}};
  Check({
      {"Mutate", "empty row", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "", PutA()); }},
      {"Mutate", "row over the limit", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), std::string((16 << 10) + 1, 'r'), PutA()); }},
      {"Mutate", "1 MiB row", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), kHuge, PutA()); }},
      {"Mutate", "unknown family", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "r1", unknown_fam); }},
      {"Mutate", "1 MiB qualifier", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "r1", PutA(kHuge)); }},
      {"Mutate", "value over the limit", Code::kInvalidArgument,
       [&] {
         return tab.Mutate(WriteOptions(), "r1", PutA("q", std::string((16 << 20) + 1, 'v')));
       }},
      {"Mutate", "timestamp 0", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "r1", PutA("q", "v", 0)); }},
      {"Mutate", "timestamp 2^64-1", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "r1", PutA("q", "v", UINT64_MAX)); }},
      {"Mutate", "no entries", Code::kInvalidArgument,
       [&] { return tab.Mutate(WriteOptions(), "r1", RowMutation()); }},
      {"Mutate", "a dropped table", Code::kNotFound,
       [&] { return gone_.Mutate(WriteOptions(), "r1", PutA()); }},
      {"Mutate", "an empty handle", Code::kInvalidArgument,
       [&] { return Table().Mutate(WriteOptions(), "r1", PutA()); }},
      {"CheckAndMutate", "a condition on an unknown family", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutate(WriteOptions(), "r1", {unknown_cond}, PutA())); }},
      {"CheckAndMutate", "a condition with min above max", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutate(WriteOptions(), "r1", {bad_range}, PutA())); }},
      {"CheckAndMutate", "a value to compare over the limit", Code::kInvalidArgument,
       [&] {
         const std::string big((16 << 20) + 1, 'v');
         return StatusOf(tab.CheckAndMutate(WriteOptions(), "r1",
                                            {Condition::ValueEquals("a", "q", 1, big)}, PutA()));
       }},
      {"CheckAndMutate", "no conditions and no mutation", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutate(WriteOptions(), "r1", {}, RowMutation())); }},
      {"CheckAndMutate", "1 MiB row", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutate(WriteOptions(), kHuge, {}, PutA())); }},
      {"CheckAndMutateBatch", "one row twice", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutateBatch(WriteOptions(), same_row)); }},
      {"CheckAndMutateBatch", "one bad entry", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutateBatch(WriteOptions(), one_bad)); }},
      {"CheckAndMutateAll", "one row twice", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutateAll(WriteOptions(), same_row)); }},
      {"CheckAndMutateAll", "one bad entry", Code::kInvalidArgument,
       [&] { return StatusOf(tab.CheckAndMutateAll(WriteOptions(), one_bad)); }},
      {"ReadRow", "empty row", Code::kInvalidArgument,
       [&] { return StatusOf(tab.ReadRow(ReadOptions(), "")); }},
      {"ReadRow", "1 MiB row", Code::kInvalidArgument,
       [&] { return StatusOf(tab.ReadRow(ReadOptions(), kHuge)); }},
      {"ReadRow", "unknown family", Code::kInvalidArgument,
       [&] { return StatusOf(tab.ReadRow(ReadOptions(), "r1", unknown_family)); }},
      {"ReadRow", "min timestamp above max", Code::kInvalidArgument,
       [&] { return StatusOf(tab.ReadRow(ReadOptions(), "r1", inverted)); }},
      {"ReadRow", "a dropped table", Code::kNotFound,
       [&] { return StatusOf(gone_.ReadRow(ReadOptions(), "r1")); }},
      {"Scan", "start after end", Code::kInvalidArgument,
       [&] { return StatusOf(tab.Scan(ReadOptions(), backwards)); }},
      {"Scan", "unknown family", Code::kInvalidArgument,
       [&] { return StatusOf(tab.Scan(ReadOptions(), scan_unknown)); }},
      {"NewReadSession", "min timestamp above max", Code::kInvalidArgument,
       [&] { return StatusOf(tab.NewReadSession(inverted_session)); }},
      {"NewReadSession", "max_versions 0", Code::kInvalidArgument,
       [&] { return StatusOf(tab.NewReadSession(no_versions)); }},
      {"NewReadSession", "a dropped table", Code::kNotFound,
       [&] { return StatusOf(gone_.NewReadSession()); }},
      {"ReadSession::Get", "unknown family", Code::kInvalidArgument,
       [&] { return StatusOf((*session)->Get("r1", "nope", "q")); }},
      {"ReadSession::Get", "1 MiB row", Code::kInvalidArgument,
       [&] { return StatusOf((*session)->Get(kHuge, "a", "q")); }},
      {"GetTabletStats", "a dropped table", Code::kNotFound,
       [&] { return StatusOf(gone_.GetTabletStats()); }},
      {"GetSchema", "a dropped table", Code::kNotFound,
       [&] { return StatusOf(gone_.GetSchema()); }},
  });
}

TEST_F(BadInputTest, TransactionAndCollectorCalls) {
  TransactionOptions too_long;
  too_long.lock_wait_millis = TransactionOptions::kMaxLockWaitMillis + 1;
  auto txn = db_->Begin();
  ASSERT_OK(txn);
  Transaction& x = **txn;
  auto noop = std::make_shared<NoopObserver>();
  auto done = db_->Begin();
  ASSERT_OK(done);
  ASSERT_OK((*done)->Commit());
  Check({
      {"TransactionDB::CreateTable", "empty name", Code::kInvalidArgument,
       [&] { return db_->CreateTable(""); }},
      {"TransactionDB::CreateTable", "a taken name", Code::kAlreadyExists,
       [&] { return db_->CreateTable("tx"); }},
      {"TransactionDB::Begin", "lock wait over the limit", Code::kInvalidArgument,
       [&] { return StatusOf(db_->Begin(too_long)); }},
      {"Transaction::Get", "unknown table", Code::kInvalidArgument,
       [&] { return StatusOf(x.Get("nope", "k", "c")); }},
      {"Transaction::Get", "a table that is not transactional", Code::kInvalidArgument,
       [&] { return StatusOf(x.Get("tab", "k", "c")); }},
      {"Transaction::Get", "empty row", Code::kInvalidArgument,
       [&] { return StatusOf(x.Get("tx", "", "c")); }},
      {"Transaction::Get", "empty column", Code::kInvalidArgument,
       [&] { return StatusOf(x.Get("tx", "k", "")); }},
      {"Transaction::Get", "1 MiB row", Code::kInvalidArgument,
       [&] { return StatusOf(x.Get("tx", kHuge, "c")); }},
      {"Transaction::Set", "unknown table", Code::kInvalidArgument,
       [&] { return x.Set("nope", "k", "c", "v"); }},
      {"Transaction::Set", "empty column", Code::kInvalidArgument,
       [&] { return x.Set("tx", "k", "", "v"); }},
      {"Transaction::Set", "1 MiB column", Code::kInvalidArgument,
       [&] { return x.Set("tx", "k", kHuge, "v"); }},
      {"Transaction::Erase", "empty row", Code::kInvalidArgument,
       [&] { return x.Erase("tx", "", "c"); }},
      {"Transaction::Get", "a committed transaction", Code::kInvalidArgument,
       [&] { return StatusOf((*done)->Get("tx", "k", "c")); }},
      {"Transaction::Set", "a committed transaction", Code::kInvalidArgument,
       [&] { return (*done)->Set("tx", "k", "c", "v"); }},
      {"GarbageCollector::HoldSafepoint", "empty id", Code::kInvalidArgument,
       [&] { return gc_->HoldSafepoint("", x.start_ts(), 1000); }},
      {"GarbageCollector::HoldSafepoint", "ttl 0", Code::kInvalidArgument,
       [&] { return gc_->HoldSafepoint("backup", x.start_ts(), 0); }},
      {"GarbageCollector::ReleaseSafepoint", "unknown id", Code::kNotFound,
       [&] { return gc_->ReleaseSafepoint("nope"); }},
      {"ObserverWorker::Start", "no observers", Code::kInvalidArgument,
       [&] { return StatusOf(ObserverWorker::Start(db_.get(), {})); }},
      {"ObserverWorker::Start", "a null observer", Code::kInvalidArgument,
       [&] {
         return StatusOf(
             ObserverWorker::Start(db_.get(), {{"tx", "c", NotificationKind::kWeak, nullptr}}));
       }},
      {"ObserverWorker::Start", "one column twice", Code::kInvalidArgument,
       [&] {
         return StatusOf(
             ObserverWorker::Start(db_.get(), {{"tx", "c", NotificationKind::kWeak, noop},
                                               {"tx", "c", NotificationKind::kWeak, noop}}));
       }},
      {"ObserverWorker::Start", "a strong observer of a column not observed",
       Code::kInvalidArgument,
       [&] {
         return StatusOf(
             ObserverWorker::Start(db_.get(), {{"tx", "c", NotificationKind::kStrong, noop}}));
       }},
      {"ObserverWorker::Start", "0 threads", Code::kInvalidArgument,
       [&] {
         ObserverWorkerOptions o;
         o.threads = 0;
         return StatusOf(
             ObserverWorker::Start(db_.get(), {{"tx", "c", NotificationKind::kWeak, noop}}, o));
       }},
  });
  // The transaction the bad calls went to still commits what it had.
  ASSERT_OK(x.Set("tx", "k2", "c", "after"));
  ASSERT_OK(x.Commit());
}

TEST_F(BadInputTest, EveryCallOnAClosedEngine) {
  Tenant t = *engine_->OpenTenant("t");
  auto session = table_.NewReadSession();
  ASSERT_OK(session);
  auto txn = db_->Begin();
  ASSERT_OK(txn);
  ASSERT_OK(gc_->Close());
  gc_.reset();
  ASSERT_OK(db_->Close());
  ASSERT_OK(engine_->Close());
  Engine& e = *engine_;
  std::vector<std::pair<std::string, std::function<Status()>>> calls = {
      {"CreateTenant", [&] { return e.CreateTenant("u"); }},
      {"SetTenantOptions", [&] { return e.SetTenantOptions("t", TenantOptions()); }},
      {"OpenTenant", [&] { return StatusOf(e.OpenTenant("t")); }},
      {"ListTenants", [&] { return StatusOf(e.ListTenants()); }},
      {"DropTenant", [&] { return e.DropTenant("t"); }},
      {"Flush", [&] { return e.Flush(); }},
      {"Compact", [&] { return e.Compact(); }},
      {"CreateTable", [&] { return t.CreateTable("new", TwoGroups()); }},
      {"DropTable", [&] { return t.DropTable("tab"); }},
      {"ListTables", [&] { return StatusOf(t.ListTables()); }},
      {"Mutate", [&] { return table_.Mutate(WriteOptions(), "r1", PutA()); }},
      {"CheckAndMutate",
       [&] { return StatusOf(table_.CheckAndMutate(WriteOptions(), "r1", {}, PutA())); }},
      {"ReadRow", [&] { return StatusOf(table_.ReadRow(ReadOptions(), "r1")); }},
      {"Scan", [&] { return StatusOf(table_.Scan(ReadOptions(), ScanSpec())); }},
      {"ReadSession::Get", [&] { return StatusOf((*session)->Get("r1", "a", "q")); }},
      {"Transaction::Get", [&] { return StatusOf((*txn)->Get("tx", "k", "c")); }},
      {"Transaction::Commit",
       [&] {
         (*txn)->Set("tx", "k", "c", "late").PermitUncheckedError();
         return (*txn)->Commit();
       }},
      {"TransactionDB::Begin", [&] { return StatusOf(db_->Begin()); }},
  };
  for (const auto& [call, run] : calls) {
    SCOPED_TRACE(call);
    const Status s = run();
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_LE(s.ToString().size(), kMaxMessage);
  }
  txn->reset();  // it holds the services' directory lock
  session->reset();
  engine_.reset();
  db_.reset();
  services_.reset();
  Open();
  EXPECT_EQ(Fingerprint(), before_);
}

}  // namespace
}  // namespace strata
