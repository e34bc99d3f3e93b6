// Transactions on an engine's tables: the public API end to end, across
// tables, and across a reopen of the engine and the services.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/records.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

class TransactionEngineTest : public ::testing::Test {
 protected:
  TransactionEngineTest() { test::SetCommitModeFromEnvironment(&options_); }
  void Open() {
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"));
    ASSERT_OK(e.status());
    engine_ = std::move(e).value();
    Status s = engine_->CreateTenant("t");
    ASSERT_TRUE(s.ok() || s.code() == Status::Code::kAlreadyExists) << s.ToString();
    OpenDB();
  }
  // The services and a TransactionDB on tenant "t" of the open engine.
  void OpenDB() {
    Result<std::shared_ptr<TransactionServices>> services =
        TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services.status());
    Result<std::unique_ptr<TransactionDB>> db =
        TransactionDB::Open(*services, *engine_->OpenTenant("t"), options_);
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }
  void Close() {
    if (db_ != nullptr) {
      ASSERT_OK(db_->Close());
    }
    db_.reset();
    if (engine_ != nullptr) {
      ASSERT_OK(engine_->Close());
    }
    engine_.reset();
  }
  void TearDown() override { Close(); }

  std::string Read(const std::string& table, const std::string& row) {
    std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
    Result<std::string> v = t->Get(table, row, "c");
    if (v.status().code() == Status::Code::kNotFound) return "<none>";
    EXPECT_OK(v.status());
    return v.ok() ? *v : "<error>";
  }

  test::ScratchDir dir_{"txn_engine"};
  TransactionDBOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TransactionDB> db_;
};

// A table dropped through the tenant and created again under its name is a
// new, empty table to the TransactionDB, not the dropped one it once used.
TEST_F(TransactionEngineTest, TableDroppedAndCreatedAgainIsTheNewOne) {
  Open();
  ASSERT_OK(db_->CreateTable("accounts"));
  {
    std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
    ASSERT_OK(t->Set("accounts", "bob", "c", "10"));
    ASSERT_OK(t->Commit());
  }
  EXPECT_EQ(Read("accounts", "bob"), "10");
  ASSERT_OK(engine_->OpenTenant("t")->DropTable("accounts"));
  ASSERT_OK(db_->CreateTable("accounts"));
  EXPECT_EQ(Read("accounts", "bob"), "<none>");
  {
    std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
    ASSERT_OK(t->Set("accounts", "bob", "c", "7"));
    ASSERT_OK(t->Commit());
  }
  EXPECT_EQ(Read("accounts", "bob"), "7");
}

TEST_F(TransactionEngineTest, CommitsAcrossTablesSurviveReopen) {
  Open();
  ASSERT_OK(db_->CreateTable("accounts"));
  ASSERT_OK(db_->CreateTable("log"));
  EXPECT_EQ(db_->CreateTable("accounts").code(), Status::Code::kAlreadyExists);
  {
    std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
    ASSERT_OK(t->Set("accounts", "bob", "c", "10"));
    ASSERT_OK(t->Set("accounts", "joe", "c", "2"));
    ASSERT_OK(t->Set("log", "1", "c", std::string(1000, 'x')));  // not inline
    ASSERT_OK(t->Commit());
  }
  {
    std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
    ASSERT_OK(t->Set("accounts", "bob", "c", "3"));
    ASSERT_OK(t->Set("accounts", "joe", "c", "9"));
    ASSERT_OK(t->Commit());
  }
  EXPECT_EQ(Read("accounts", "bob"), "3");
  Close();
  Open();
  EXPECT_EQ(Read("accounts", "bob"), "3");
  EXPECT_EQ(Read("accounts", "joe"), "9");
  EXPECT_EQ(Read("log", "1"), std::string(1000, 'x'));
  // The table has the transactional schema: `lock` is an in-memory group.
  Result<Table> table = engine_->OpenTenant("t")->OpenTable("accounts");
  ASSERT_OK(table.status());
  std::unique_ptr<RowStore> store = NewTableRowStore(*table);
  EXPECT_EQ(test::CountLocks(*store), 0u);
  // Its `lock` family's column markers hide by timestamp, and no other's.
  Result<TableSchema> schema = table->GetSchema();
  ASSERT_OK(schema.status());
  ASSERT_EQ(schema->families.size(), 5u);
  for (const ColumnFamilyOptions& f : schema->families) {
    EXPECT_EQ(f.column_markers_hide_by_timestamp, f.name == txn::kLockFamily) << f.name;
  }
}

// Transactions may outlive their TransactionDB: once it is gone their calls
// fail as after Close, and they can still be destroyed, committed or not.
// What committed before stays, and no lock is left by the ones that never
// got to prewrite.
TEST_F(TransactionEngineTest, TransactionsOutliveTheirTransactionDB) {
  Open();
  ASSERT_OK(db_->CreateTable("accounts"));
  std::unique_ptr<Transaction> done = std::move(db_->Begin()).value();
  ASSERT_OK(done->Set("accounts", "bob", "c", "10"));
  ASSERT_OK(done->Commit());
  std::unique_ptr<Transaction> open = std::move(db_->Begin()).value();
  ASSERT_OK(open->Set("accounts", "joe", "c", "2"));
  std::unique_ptr<Transaction> reader = std::move(db_->Begin()).value();
  ASSERT_OK(reader->Get("accounts", "bob", "c").status());

  db_.reset();  // the handle goes first: the TransactionDB closes
  for (Transaction* t : {open.get(), reader.get()}) {
    Status s = t->Get("accounts", "bob", "c").status();
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.ToString().find("closed"), std::string::npos) << s.ToString();
    EXPECT_EQ(t->Set("accounts", "x", "c", "1").code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(t->Commit().code(), Status::Code::kInvalidArgument);
  }
  EXPECT_EQ(done->commit_ts() > 0, true);
  done.reset();
  open.reset();
  reader.reset();

  ASSERT_NO_FATAL_FAILURE(OpenDB());
  EXPECT_EQ(Read("accounts", "bob"), "10");
  EXPECT_EQ(Read("accounts", "joe"), "<none>");
  std::unique_ptr<RowStore> store =
      NewTableRowStore(*engine_->OpenTenant("t")->OpenTable("accounts"));
  EXPECT_EQ(test::CountLocks(*store), 0u);
}

TEST_F(TransactionEngineTest, ANonTransactionalTableIsRejected) {
  Open();
  TableSchema plain;
  plain.families.push_back(ColumnFamilyOptions{"f", ""});
  ASSERT_OK(engine_->OpenTenant("t")->CreateTable("plain", plain));
  std::unique_ptr<Transaction> t = std::move(db_->Begin()).value();
  Status s = t->Get("plain", "r", "c").status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(t->Get("missing", "r", "c").status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata
