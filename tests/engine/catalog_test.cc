// Tenants and tables by name through the public API: the naming rules and
// their errors, one table name in two tenants, what survives a reopen, and
// empty handles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

using test::EngineTest;
using test::TwoGroupSchema;

TEST_F(EngineTest, EmptyHandlesReturnErrors) {
  Table t;
  EXPECT_TRUE(
      t.Mutate(WriteOptions(), "r", RowMutation().Put("a", "q", 1, "v")).IsInvalidArgument());
  EXPECT_TRUE(t.ReadRow(ReadOptions(), "r").status().IsInvalidArgument());
  Tenant n;
  EXPECT_TRUE(n.CreateTable("x", TwoGroupSchema()).IsInvalidArgument());
  EXPECT_TRUE(n.OpenTable("x").status().IsInvalidArgument());
}

TEST_F(EngineTest, TenantsAndTablesNamesAndErrors) {
  EXPECT_TRUE(engine_->CreateTenant("t1").IsAlreadyExists());
  EXPECT_TRUE(engine_->CreateTenant("").IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant(std::string(65, 'x')).IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant("bad name").IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant(std::string("nul\0", 4)).IsInvalidArgument());
  EXPECT_OK(engine_->CreateTenant(std::string(64, 'x')));
  EXPECT_TRUE(engine_->OpenTenant("missing").status().IsNotFound());

  EXPECT_TRUE(tenant_.CreateTable("tab", TwoGroupSchema()).IsAlreadyExists());
  EXPECT_TRUE(tenant_.OpenTable("missing").status().IsNotFound());
  TableSchema none;
  EXPECT_TRUE(tenant_.CreateTable("t2", none).IsInvalidArgument());
  TableSchema dup;
  dup.families = {{.name = "f"}, {.name = "f"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", dup).IsInvalidArgument());
  TableSchema unknown_group;
  unknown_group.families = {{.name = "f", .locality_group = "nowhere"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", unknown_group).IsInvalidArgument());
  TableSchema bad_family;
  bad_family.families = {{.name = "f:1"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", bad_family).IsInvalidArgument());
  EXPECT_EQ(*tenant_.ListTables(), std::vector<std::string>{"tab"});

  // The same table name in another tenant is another table.
  ASSERT_OK(engine_->CreateTenant("t2"));
  auto other = engine_->OpenTenant("t2");
  ASSERT_OK(other);
  ASSERT_OK(other->CreateTable("tab", TwoGroupSchema()));
  auto other_tab = other->OpenTable("tab");
  ASSERT_OK(other_tab);
  ASSERT_OK(Put("r", "a", "q", 1, "tenant one"));
  EXPECT_TRUE(other_tab->ReadRow(ReadOptions(), "r")->empty());

  Reopen();
  EXPECT_EQ(engine_->ListTenants()->size(), 3u);
  other = engine_->OpenTenant("t2");
  ASSERT_OK(other);
  EXPECT_EQ(*other->ListTables(), std::vector<std::string>{"tab"});
  EXPECT_EQ(Read("r").size(), 1u);
}

}  // namespace
}  // namespace strata
