#include "cluster/etcd_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cluster/local_etcd.h"
#include "util/status_matchers.h"

namespace strata::cluster {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

class EtcdClientTest : public SharedEtcdTest {
 protected:
  void SetUp() override {
    ASSERT_NE(etcd_, nullptr);
    client_ = Open({etcd_->endpoint()});
    ASSERT_NE(client_, nullptr);
    prefix_ = "/test/" + TestName() + "/";
  }

  static std::unique_ptr<EtcdClient> Open(std::vector<std::string> endpoints,
                                          uint64_t timeout_millis = 3000) {
    EtcdOptions options;
    options.endpoints = std::move(endpoints);
    options.call_timeout_millis = timeout_millis;
    Result<std::unique_ptr<EtcdClient>> c = EtcdClient::Open(options);
    EXPECT_OK(c);
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }

  std::unique_ptr<EtcdClient> client_;
  std::string prefix_;
};

TEST_F(EtcdClientTest, PutGetRangeDeleteWithBinaryBytes) {
  const std::string binary_key = Key(std::string("b\0\xff\n\"", 5));
  const std::string binary_value("v\0\x01\xfe\\\"", 6);
  Result<int64_t> rev = client_->Put(binary_key, binary_value);
  ASSERT_OK(rev);
  EXPECT_GT(*rev, 0);
  Result<KeyValue> kv = client_->Get(binary_key);
  ASSERT_OK(kv);
  EXPECT_EQ(kv->key, binary_key);
  EXPECT_EQ(kv->value, binary_value);
  EXPECT_EQ(kv->version, 1);
  EXPECT_EQ(kv->mod_revision, *rev);

  EXPECT_EQ(client_->Get(Key("missing")).status().code(), Status::Code::kNotFound);
  ASSERT_OK(client_->Put(Key("a"), "1"));
  ASSERT_OK(client_->Put(Key("c"), ""));  // an empty value is a value
  Result<KeyValue> empty = client_->Get(Key("c"));
  ASSERT_OK(empty);
  EXPECT_EQ(empty->value, "");

  const std::string end = EtcdClient::PrefixEnd(prefix_);
  Result<RangeResult> all = client_->Range(prefix_, end);
  ASSERT_OK(all);
  ASSERT_EQ(all->kvs.size(), 3u);
  EXPECT_EQ(all->count, 3);
  EXPECT_FALSE(all->more);
  EXPECT_EQ(all->kvs[0].key, Key("a"));  // sorted by key
  EXPECT_EQ(all->kvs[1].key, binary_key);
  EXPECT_EQ(all->kvs[2].key, Key("c"));

  Result<RangeResult> limited = client_->Range(prefix_, end, 2);
  ASSERT_OK(limited);
  EXPECT_EQ(limited->kvs.size(), 2u);
  EXPECT_TRUE(limited->more);
  EXPECT_EQ(limited->count, 3);

  Result<int64_t> deleted = client_->Delete(Key("a"), Key("b\xff"));
  ASSERT_OK(deleted);
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ(*client_->Delete(Key("a")), 0);
  EXPECT_EQ(client_->Range(prefix_, end)->kvs.size(), 1u);
}

TEST(EtcdPrefixEndTest, RaisesTheLastByteBelowFf) {
  EXPECT_EQ(EtcdClient::PrefixEnd("abc"), "abd");
  EXPECT_EQ(EtcdClient::PrefixEnd(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(EtcdClient::PrefixEnd(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST_F(EtcdClientTest, TxnComparesAndBranches) {
  const std::string k = Key("leader");
  // Create only if absent.
  Result<TxnResult> first = client_->Txn({Compare::CreateRevision(k, Compare::Op::kEqual, 0)},
                                         {TxnOp::Put(k, "me")}, {TxnOp::Get(k)});
  ASSERT_OK(first);
  EXPECT_TRUE(first->succeeded);
  EXPECT_TRUE(first->ranges.empty());
  Result<TxnResult> second = client_->Txn({Compare::CreateRevision(k, Compare::Op::kEqual, 0)},
                                          {TxnOp::Put(k, "you")}, {TxnOp::Get(k)});
  ASSERT_OK(second);
  EXPECT_FALSE(second->succeeded);
  ASSERT_EQ(second->ranges.size(), 1u);
  ASSERT_EQ(second->ranges[0].kvs.size(), 1u);
  EXPECT_EQ(second->ranges[0].kvs[0].value, "me");
  const int64_t mod = second->ranges[0].kvs[0].mod_revision;

  // Value and revision compares, several ops in one branch.
  Result<TxnResult> third = client_->Txn(
      {Compare::ValueEquals(k, "me"), Compare::ModRevision(k, Compare::Op::kEqual, mod),
       Compare::Version(k, Compare::Op::kLess, 2)},
      {TxnOp::Put(k, "me2"), TxnOp::Put(Key("other"), "x"), TxnOp::Get(k)});
  ASSERT_OK(third);
  EXPECT_TRUE(third->succeeded);
  ASSERT_EQ(third->ranges.size(), 1u);
  EXPECT_EQ(third->ranges[0].kvs[0].value, "me2");
  EXPECT_EQ(client_->Get(Key("other"))->value, "x");

  Result<TxnResult> stale =
      client_->Txn({Compare::ModRevision(k, Compare::Op::kEqual, mod)}, {TxnOp::Delete(k)});
  ASSERT_OK(stale);
  EXPECT_FALSE(stale->succeeded);
  EXPECT_EQ(client_->Get(k)->value, "me2");
  Result<TxnResult> greater =
      client_->Txn({Compare::Version(k, Compare::Op::kGreater, 1), Compare::ValueEquals(k, "me2")},
                   {TxnOp::Delete(k)});
  ASSERT_OK(greater);
  EXPECT_TRUE(greater->succeeded);
  EXPECT_EQ(client_->Get(k).status().code(), Status::Code::kNotFound);
}

TEST_F(EtcdClientTest, LeasesKeepKeysUntilRevokedOrExpired) {
  Result<std::pair<int64_t, int64_t>> lease = client_->GrantLease(30);
  ASSERT_OK(lease);
  EXPECT_GE(lease->second, 30);
  ASSERT_OK(client_->Put(Key("owned"), "1", lease->first));
  EXPECT_EQ(client_->Get(Key("owned"))->lease, lease->first);
  Result<int64_t> ttl = client_->KeepAliveOnce(lease->first);
  ASSERT_OK(ttl);
  EXPECT_GE(*ttl, 30);
  Result<int64_t> left = client_->LeaseTimeToLive(lease->first);
  ASSERT_OK(left);
  EXPECT_GT(*left, 0);
  ASSERT_OK(client_->RevokeLease(lease->first));
  EXPECT_EQ(client_->Get(Key("owned")).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(client_->KeepAliveOnce(lease->first).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(client_->LeaseTimeToLive(lease->first).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(client_->RevokeLease(lease->first).code(), Status::Code::kNotFound);
  // A put under a lease that is gone is refused.
  EXPECT_FALSE(client_->Put(Key("orphan"), "1", lease->first).ok());

  // An unrenewed lease expires by itself, and its keys go with it.
  Result<std::pair<int64_t, int64_t>> short_lease = client_->GrantLease(2);
  ASSERT_OK(short_lease);
  ASSERT_OK(client_->Put(Key("short"), "1", short_lease->first));
  const auto start = Clock::now();
  while (client_->Get(Key("short")).ok() && MillisSince(start) < 10000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(client_->Get(Key("short")).status().code(), Status::Code::kNotFound);
  EXPECT_GE(MillisSince(start), 1000);
  EXPECT_EQ(client_->KeepAliveOnce(short_lease->first).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(client_->GrantLease(0).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(EtcdClientTest, WatchSeesPutsAndDeletesInOrder) {
  const std::string end = EtcdClient::PrefixEnd(prefix_);
  Result<std::unique_ptr<EtcdWatch>> watch = client_->Watch(prefix_, end);
  ASSERT_OK(watch);
  EXPECT_EQ((*watch)->Next(100).status().code(), Status::Code::kTimedOut);  // nothing yet
  ASSERT_OK(client_->Put(Key("x"), "1"));
  ASSERT_OK(client_->Put(Key("y"), "2"));
  ASSERT_OK(client_->Delete(Key("x")));
  ASSERT_OK(client_->Put("/elsewhere", "not watched"));
  std::vector<WatchEvent> events;
  while (events.size() < 3) {
    Result<std::vector<WatchEvent>> next = (*watch)->Next(3000);
    ASSERT_OK(next);
    events.insert(events.end(), next->begin(), next->end());
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(events[0].kv.key, Key("x"));
  EXPECT_EQ(events[0].kv.value, "1");
  EXPECT_EQ(events[1].kv.key, Key("y"));
  EXPECT_EQ(events[2].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(events[2].kv.key, Key("x"));
  EXPECT_LT(events[0].kv.mod_revision, events[1].kv.mod_revision);
  EXPECT_LT(events[1].kv.mod_revision, events[2].kv.mod_revision);

  // A watch from a past revision replays what happened since.
  Result<std::unique_ptr<EtcdWatch>> replay =
      client_->Watch(prefix_, end, events[1].kv.mod_revision);
  ASSERT_OK(replay);
  Result<std::vector<WatchEvent>> again = (*replay)->Next(3000);
  ASSERT_OK(again);
  ASSERT_FALSE(again->empty());
  EXPECT_EQ(again->front().kv.key, Key("y"));

  // Cancel wakes a reader blocked in another thread.
  std::atomic<bool> woke{false};
  std::thread reader([&] {
    Result<std::vector<WatchEvent>> r = (*watch)->Next(30000);
    EXPECT_EQ(r.status().code(), Status::Code::kIOError);
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*watch)->Cancel();
  reader.join();
  EXPECT_TRUE(woke);
}

TEST_F(EtcdClientTest, DeadEndpointsAreSkipped) {
  // Port 1 on 127.0.0.1 refuses at once; the call goes on to the live one.
  std::unique_ptr<EtcdClient> c = Open({"127.0.0.1:1", etcd_->endpoint()});
  ASSERT_NE(c, nullptr);
  ASSERT_OK(c->Put(Key("k"), "v"));
  EXPECT_EQ(c->Get(Key("k"))->value, "v");
  Result<std::unique_ptr<EtcdWatch>> watch = c->Watch(Key("k"), {});
  EXPECT_OK(watch);
}

TEST_F(EtcdClientTest, NoEndpointAnswersWithinTheDeadline) {
  std::unique_ptr<EtcdClient> c = Open({"127.0.0.1:1", "127.0.0.1:2"}, 400);
  ASSERT_NE(c, nullptr);
  const auto start = Clock::now();
  Result<KeyValue> r = c->Get("k");
  const int64_t took = MillisSince(start);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kTimedOut) << r.status().ToString();
  EXPECT_NE(r.status().message().find("127.0.0.1:"), std::string::npos) << r.status().ToString();
  EXPECT_GE(took, 300);
  EXPECT_LT(took, 2000);
}

TEST_F(EtcdClientTest, FrozenServerFailsCallsWithinTheDeadline) {
  std::unique_ptr<EtcdClient> c = Open({etcd_->endpoint()}, 500);
  ASSERT_NE(c, nullptr);
  ASSERT_OK(c->Put(Key("k"), "v"));  // leaves a pooled connection
  etcd_->Pause();
  auto start = Clock::now();
  Result<KeyValue> read = c->Get(Key("k"));
  int64_t took = MillisSince(start);
  EXPECT_EQ(read.status().code(), Status::Code::kTimedOut) << read.status().ToString();
  EXPECT_LT(took, 2000);
  start = Clock::now();
  Result<int64_t> write = c->Put(Key("k"), "w");
  took = MillisSince(start);
  ASSERT_FALSE(write.ok());
  // The request was sent: whether etcd applies it is unknown, and it is not
  // sent again.
  EXPECT_NE(write.status().message().find("unknown"), std::string::npos)
      << write.status().ToString();
  EXPECT_LT(took, 2000);
  etcd_->Resume();
  Result<KeyValue> after = c->Get(Key("k"));
  ASSERT_OK(after);
  EXPECT_TRUE(after->value == "v" || after->value == "w");
}

TEST(EtcdClientOpenTest, RefusesBadOptions) {
  EtcdOptions none;
  EXPECT_EQ(EtcdClient::Open(none).status().code(), Status::Code::kInvalidArgument);
  EtcdOptions tls;
  tls.endpoints = {"https://127.0.0.1:2379"};
  EXPECT_EQ(EtcdClient::Open(tls).status().code(), Status::Code::kInvalidArgument);
  EtcdOptions zero;
  zero.endpoints = {"127.0.0.1:2379"};
  zero.call_timeout_millis = 0;
  EXPECT_EQ(EtcdClient::Open(zero).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::cluster
