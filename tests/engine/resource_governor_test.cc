// ResourceGovernor and TenantBudget on their own: shares by weight, the
// early-switch and stall rules, quotas, payload bytes.
#include "engine/resource_governor.h"

#include <gtest/gtest.h>

#include "util/status_matchers.h"

namespace strata::engine {
namespace {

TenantOptions Weight(uint32_t w) {
  TenantOptions o;
  o.write_buffer_weight = w;
  return o;
}

TEST(ResourceGovernorTest, SharesFollowWeightsAndMembership) {
  ResourceGovernor g(1000);
  auto a = g.AddTenant(1, "a", Weight(1));
  EXPECT_EQ(a->share(), 1000u);
  auto b = g.AddTenant(2, "b", Weight(3));
  EXPECT_EQ(a->share(), 250u);
  EXPECT_EQ(b->share(), 750u);
  auto c = g.AddTenant(3, "c", Weight(3));
  // 1000 split 1:3:3, rounded down.
  EXPECT_EQ(a->share(), 142u);
  EXPECT_EQ(b->share(), 428u);
  EXPECT_EQ(c->share(), 428u);
  g.SetOptions(c.get(), Weight(6));
  EXPECT_EQ(c->share(), 600u);
  EXPECT_EQ(c->options().write_buffer_weight, 6u);
  g.RemoveTenant(b.get());
  EXPECT_EQ(a->share(), 1000u / 7);
  EXPECT_EQ(c->share(), 1000u / 7 * 6 + 1000u % 7 * 6 / 7);
  // Cache ids are distinct and never the block cache's "no tenant".
  EXPECT_NE(a->cache_id(), sstable::BlockCache::kNoOwner);
  EXPECT_NE(a->cache_id(), b->cache_id());
  EXPECT_NE(b->cache_id(), c->cache_id());
}

TEST(ResourceGovernorTest, SharesOfHugeTotalsDoNotOverflow) {
  ResourceGovernor g(UINT64_MAX - 10);
  auto a = g.AddTenant(1, "a", Weight(kMaxWriteBufferWeight));
  auto b = g.AddTenant(2, "b", Weight(kMaxWriteBufferWeight));
  EXPECT_EQ(a->share(), (UINT64_MAX - 10) / 2);
  EXPECT_EQ(b->share(), a->share());
}

TEST(ResourceGovernorTest, SwitchAndStallRules) {
  ResourceGovernor g(1000);
  auto a = g.AddTenant(1, "a", Weight(1));
  a->ChargeActive(1000);
  EXPECT_FALSE(a->ShouldSwitchMemtable());  // at the share, not over it
  a->ChargeActive(1);
  EXPECT_TRUE(a->ShouldSwitchMemtable());
  a->MemtableSwitched(1001);
  EXPECT_FALSE(a->ShouldSwitchMemtable());  // nothing active to switch
  EXPECT_TRUE(a->ImmutableOverShare());
  a->ChargeActive(499);
  EXPECT_FALSE(a->ShouldSwitchMemtable());  // less than half the share active
  a->ChargeActive(1);
  EXPECT_TRUE(a->ShouldSwitchMemtable());
  a->ImmutableFlushed(1001);
  EXPECT_FALSE(a->ImmutableOverShare());
  EXPECT_FALSE(a->ShouldSwitchMemtable());
  EXPECT_EQ(a->memtable_bytes(), 500u);
  a->ReleaseMemtables(500, 0);
  EXPECT_EQ(a->memtable_bytes(), 0u);
  EXPECT_EQ(a->immutable_bytes(), 0u);
}

TEST(ResourceGovernorTest, DiskQuota) {
  ResourceGovernor g(1 << 20);
  TenantOptions o;
  o.disk_quota = 1000;
  auto a = g.AddTenant(1, "shop", o);
  a->SetSstableBytes(600);
  a->ChargeActive(300);
  EXPECT_OK(a->CheckDiskQuota(100));
  Status s = a->CheckDiskQuota(101);
  EXPECT_TRUE(s.IsResourceExhausted());
  EXPECT_NE(s.ToString().find("'shop'"), std::string::npos);
  EXPECT_NE(s.ToString().find("1000"), std::string::npos);
  EXPECT_EQ(a->Stats().quota_rejections, 1u);
  g.SetOptions(a.get(), TenantOptions());
  EXPECT_OK(a->CheckDiskQuota(1 << 30));
}

TEST(ResourceGovernorTest, ValidationAndPayload) {
  EXPECT_OK(ValidateTenantOptions(TenantOptions()));
  EXPECT_TRUE(ValidateTenantOptions(Weight(0)).IsInvalidArgument());
  EXPECT_TRUE(ValidateTenantOptions(Weight(kMaxWriteBufferWeight + 1)).IsInvalidArgument());
  RowMutation m;
  m.Put("fam", "qual", 1, "value").DeleteRow();
  EXPECT_EQ(MutationPayloadBytes("row", m), 3u + 3 + 4 + 5);
  EXPECT_TRUE(MutationAddsData(m));
  RowMutation d;
  d.DeleteColumn("fam", "q").DeleteCell("fam", "q", 3);
  EXPECT_FALSE(MutationAddsData(d));
}

TEST(ResourceGovernorTest, UnlimitedWritesNeverWait) {
  ResourceGovernor g(1 << 20);
  auto a = g.AddTenant(1, "a", TenantOptions());
  EXPECT_EQ(a->ReserveWriteBytes(1ull << 40), 0u);
  TenantOptions limited;
  limited.write_rate_limit = 1000;
  g.SetOptions(a.get(), limited);
  // 10 s of bytes at once: at least 9.9 s of wait beyond the 100 ms burst.
  EXPECT_GE(a->ReserveWriteBytes(10000), 9'800'000u);
}

}  // namespace
}  // namespace strata::engine
