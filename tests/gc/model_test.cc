// The collector against a model: random transactional histories over a few
// keys (puts, deletes, GetForUpdate locks, coordinators that die before or
// after their commit point, leaving locks that readers or the collector
// resolve), collected at random safepoints. After every round, a read of any
// key at any timestamp at or above the safepoint gives what the model says,
// and no version below the safepoint is left that the rules remove. On an
// engine, a full compaction with the collector's compaction filter runs
// between each round's lock pass and its tasks, and must change no read at
// or above the safepoint.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gc/collector.h"
#include "gc/compaction_filter.h"
#include "gc/safepoint_store.h"
#include "strata/engine.h"
#include "txn/records.h"
#include "txn/table_resolver.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::gc {
namespace {

using txn::FailPoint;

struct Key {
  std::string row, column;
  friend auto operator<=>(const Key&, const Key&) = default;
};

// Parameters: values inline (or every value in `data`); the tables on an
// engine whose compactions collect too (or in memory).
class GcModelTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  bool inline_values() const { return std::get<0>(GetParam()); }
  bool on_engine() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    txn::LocalLivenessRegistryOptions ro;
    ASSERT_OK(txn::LocalLivenessRegistry::Open(dir_.path(), ro, &registry_));
    std::shared_ptr<txn::TableResolver> tables;
    if (on_engine()) {
      EngineOptions eo;
      eo.write_buffer_size = 16 << 10;  // flushes and compactions run often
      eo.level0_compaction_trigger = 2;
      auto engine = Engine::Open(dir_.Join("db"), eo);
      ASSERT_OK(engine);
      engine_ = std::move(engine).value();
      ASSERT_OK(engine_->CreateTenant("t"));
      Tenant tenant = *engine_->OpenTenant("t");
      ASSERT_OK(tenant.CreateTable("t", txn::TransactionalSchema({})));
      tables = std::make_shared<txn::TenantTables>(tenant);
    } else {
      auto model = std::make_shared<test::ModelTables>();
      ASSERT_OK(model->Create("t"));
      tables = model;
    }
    Result<std::shared_ptr<RowStore>> store = tables->Resolve("t");
    ASSERT_OK(store);
    store_ = std::move(store).value();
    txn::TxnDBConfig config;
    config.options.sync = false;
    config.options.commit_secondaries_in_background = false;
    config.options.max_inline_value = inline_values() ? 64 : 0;
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.tables = tables;
    config.fail_point = [this](FailPoint p, uint64_t) {
      if (p != stop_at_) return false;
      stopped_ = true;
      return true;
    };
    config.list_tables = []() -> Result<std::vector<std::string>> {
      return std::vector<std::string>{"t"};
    };
    config.split_rows = [](std::string_view) -> Result<std::vector<std::string>> {
      return std::vector<std::string>{"r1"};
    };
    config.name = "t";
    Result<std::unique_ptr<TransactionDB>> db = txn::TxnDB::Make(std::move(config));
    ASSERT_OK(db);
    handle_ = std::move(db).value();
    db_ = txn::TxnDBOf(*handle_);
    CollectorConfig cc;
    cc.db = db_;
    cc.store = NewMemorySafepointStore();
    cc.options.life_time_millis = 0;
    cc.options.interval_millis = 0;
    cc.options.workers = 0;
    if (on_engine()) {
      // Once a round's locks are resolved, before its tasks: a full
      // compaction collects on its own, and no read at or above the
      // safepoint may change. (Locks above it are not resolved yet, so the
      // store, not the model, is what the reads are compared with.)
      cc.hook = [this](RoundStep step, uint64_t safepoint) {
        if (step != RoundStep::kLocksResolved) return;
        std::map<std::pair<size_t, uint64_t>, std::optional<std::string>> before;
        for (size_t i = 0; i < keys_.size(); i++) {
          for (uint64_t ts = safepoint; ts <= now_; ts++) before[{i, ts}] = StoreAt(keys_[i], ts);
        }
        EXPECT_OK(engine_->Flush());
        EXPECT_OK(engine_->Compact());
        for (const auto& [at, value] : before) {
          const Key& k = keys_[at.first];
          EXPECT_EQ(StoreAt(k, at.second), value) << k.row << "/" << k.column << " at "
                                                  << at.second << ", compacted at " << safepoint;
        }
      };
    }
    Result<std::unique_ptr<Collector>> c = Collector::Open(std::move(cc));
    ASSERT_OK(c);
    collector_ = std::move(c).value();
    if (on_engine()) {
      filter_ = std::make_shared<GcCompactionFilter>(collector_->ready(),
                                                     collector_->transactional_tables());
      ASSERT_OK(engine_->OpenTenant("t")->SetCompactionFilter(filter_));
    }
  }

  void TearDown() override {
    if (collector_ != nullptr) {
      EXPECT_OK(collector_->Close());
    }
    collector_.reset();
    handle_.reset();
    db_.reset();
    store_.reset();
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  uint64_t Next() {
    oracle_.SetNext(++now_);
    return now_;
  }

  RowStore& Store() { return *store_; }

  // What a read at `ts` finds in the store (the newest put or delete at or
  // below it); nullopt for none.
  std::optional<std::string> StoreAt(const Key& k, uint64_t ts) {
    for (const Cell& c : test::CellsOf(Store(), k.row, txn::kWriteFamily)) {
      if (c.qualifier != k.column || c.timestamp > ts) continue;
      txn::WriteRecord w;
      EXPECT_OK(txn::DecodeWrite(c.value, &w));
      if (w.kind == txn::WriteKind::kRollback || w.kind == txn::WriteKind::kLock) continue;
      if (w.kind == txn::WriteKind::kDelete) return std::nullopt;
      if (w.has_inline_value) return w.inline_value;
      for (const Cell& d : test::CellsOf(Store(), k.row, txn::kDataFamily)) {
        if (d.qualifier == k.column && d.timestamp == w.start_ts) return d.value;
      }
      return "<data missing>";
    }
    return std::nullopt;
  }

  // The model: every committed version of a key, by commit_ts.
  std::optional<std::string> ModelAt(const Key& k, uint64_t ts) {
    const auto& versions = model_[k];
    auto it = versions.upper_bound(ts);
    if (it == versions.begin()) return std::nullopt;
    return std::prev(it)->second;
  }

  test::ScratchDir dir_{"gc_model"};
  test::CountingOracle oracle_;
  uint64_t now_ = 0;
  std::unique_ptr<txn::LocalLivenessRegistry> registry_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<GcCompactionFilter> filter_;
  std::shared_ptr<RowStore> store_;
  std::vector<Key> keys_;
  std::unique_ptr<TransactionDB> handle_;
  std::shared_ptr<txn::TxnDB> db_;
  std::unique_ptr<Collector> collector_;
  std::optional<FailPoint> stop_at_;
  bool stopped_ = false;  // the coordinator stopped at stop_at_
  std::map<Key, std::map<uint64_t, std::optional<std::string>>> model_;
};

TEST_P(GcModelTest, ReadsAtOrAboveTheSafepointMatchTheModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int ops = test::LongTests() ? 20000 : test::UnderSanitizer() ? 1000 : 3000;
  for (const char* row : {"r0", "r1", "r2"}) {
    for (const char* column : {"a", "b"}) keys_.push_back({row, column});
  }
  const std::vector<Key>& keys = keys_;
  uint64_t rounds = 0;
  for (int op = 0; op < ops; op++) {
    const int what = static_cast<int>(rng() % 100);
    if (what < 8) {
      // A round at a random safepoint between the published one and now.
      const uint64_t low = collector_->safepoint();
      const uint64_t sp = low + rng() % (now_ + 1 - low);
      ASSERT_OK(collector_->HoldSafepoint("cap", sp, 1'000'000'000));
      Next();
      ASSERT_OK(collector_->RunRound());
      ASSERT_OK(collector_->ReleaseSafepoint("cap"));
      ASSERT_EQ(collector_->safepoint(), std::max(sp, low));
      rounds++;
      const uint64_t s = collector_->safepoint();
      // Locks above the safepoint are left to readers: a read of every key
      // resolves them, as a snapshot read at any timestamp would.
      for (const Key& k : keys) {
        Next();
        auto reader = db_->Begin({});
        ASSERT_OK(reader);
        Status rs = (*reader)->Get("t", k.row, k.column).status();
        ASSERT_TRUE(rs.ok() || rs.IsNotFound()) << rs.ToString();
      }
      for (const Key& k : keys) {
        SCOPED_TRACE(k.row + "/" + k.column + " after a round at " + std::to_string(s));
        for (uint64_t ts = s; ts <= now_; ts++) ASSERT_EQ(StoreAt(k, ts), ModelAt(k, ts)) << ts;
        // At or below the safepoint at most the newest put is left, and no
        // value that no record names.
        size_t below = 0;
        std::set<uint64_t> named;  // start_ts of the puts left
        for (const Cell& c : test::CellsOf(Store(), k.row, txn::kWriteFamily)) {
          if (c.qualifier != k.column) continue;
          txn::WriteRecord w;
          ASSERT_OK(txn::DecodeWrite(c.value, &w));
          if (w.kind == txn::WriteKind::kPut) named.insert(w.start_ts);
          if (c.timestamp > s) continue;
          // A lock at exactly the safepoint is left to readers (its
          // transaction may start there), whose rollback record then lands
          // at the safepoint after the round.
          if (c.timestamp == s && w.kind == txn::WriteKind::kRollback) continue;
          below++;
          EXPECT_EQ(w.kind, txn::WriteKind::kPut) << c.timestamp;
        }
        EXPECT_LE(below, 1u);
        for (const Cell& c : test::CellsOf(Store(), k.row, txn::kDataFamily)) {
          if (c.qualifier != k.column || c.timestamp > s) continue;
          EXPECT_EQ(named.count(c.timestamp), 1u) << "data at " << c.timestamp;
        }
      }
      continue;
    }
    // A transaction over one to three keys.
    const uint64_t start = Next();
    auto t = db_->Begin({});
    ASSERT_OK(t);
    ASSERT_EQ((*t)->start_ts(), start);
    std::map<Key, std::optional<std::string>> writes;
    const int n = 1 + static_cast<int>(rng() % 3);
    bool aborted = false;
    for (int i = 0; i < n && !aborted; i++) {
      const Key& k = keys[rng() % keys.size()];
      const int kind = static_cast<int>(rng() % 10);
      Status s;
      if (kind < 6) {
        const std::string v = "v" + std::to_string(start) + "-" + std::to_string(i);
        s = (*t)->Set("t", k.row, k.column, v);
        writes[k] = v;
      } else if (kind < 8) {
        s = (*t)->Erase("t", k.row, k.column);
        writes[k] = std::nullopt;
      } else {
        // A locking read: its value must be what the model says (unless the
        // transaction wrote the key itself).
        Result<std::string> v = (*t)->GetForUpdate("t", k.row, k.column);
        s = v.status();
        const bool own = writes.count(k) != 0;
        if (s.IsNotFound()) {
          s = Status::OK();
          if (!own) {
            EXPECT_EQ(ModelAt(k, start), std::nullopt);
          }
        } else if (s.ok() && !own) {
          EXPECT_EQ(std::optional<std::string>(*v), ModelAt(k, start));
        }
      }
      if (s.IsAborted() || s.IsBusy()) {
        aborted = true;
      } else {
        ASSERT_OK(s);
      }
    }
    if (aborted) continue;
    // Most commit; some coordinators die before or after the commit point.
    const int fate = static_cast<int>(rng() % 10);
    stop_at_ = fate == 0 ? std::optional<FailPoint>(FailPoint::kAfterCommitTs)
               : fate == 1 ? std::optional<FailPoint>(FailPoint::kAfterPrimaryCommit)
                           : std::nullopt;
    stopped_ = false;
    const uint64_t commit = Next();
    Status s = (*t)->Commit();
    stop_at_.reset();
    // Stopped after the commit point: committed all the same.
    const bool committed = s.ok() || (stopped_ && fate == 1);
    if (!s.ok() && !stopped_) {
      ASSERT_TRUE(s.IsAborted() || s.IsBusy()) << s.ToString();
      continue;
    }
    if (committed && !writes.empty()) {
      for (const auto& [k, v] : writes) model_[k][commit] = v;
    }
  }
  // A last round at the newest timestamp, after every lock is resolved.
  Next();
  ASSERT_OK(collector_->RunRound());
  for (const Key& k : keys) {
    auto t = db_->Begin({});
    ASSERT_OK(t);
    Result<std::string> v = (*t)->Get("t", k.row, k.column);
    const std::optional<std::string> got =
        v.ok() ? std::optional<std::string>(*v) : std::nullopt;
    if (!v.ok()) {
      ASSERT_TRUE(v.status().IsNotFound()) << v.status().ToString();
    }
    EXPECT_EQ(got, ModelAt(k, now_)) << k.row << "/" << k.column;
  }
  EXPECT_EQ(test::CountLocks(Store()), 0u);
  EXPECT_GT(rounds, 0u);
  if (on_engine()) {
    std::printf("compactions removed %" PRIu64 " records, the rounds' tasks %" PRIu64 "\n",
                filter_->dropped(), collector_->GetStats().versions_dropped);
    EXPECT_GT(filter_->dropped(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Values, GcModelTest, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Inline" : "InData") +
                                  (std::get<1>(info.param) ? "OnEngine" : "InMemory");
                         });

}  // namespace
}  // namespace strata::gc
