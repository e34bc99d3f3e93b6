// Delete ordering under crash: a child process writes every key twice and
// then deletes it, with sync on, reporting each acknowledged put and delete
// through a pipe, while a garbage collector with a zero life time collects
// in the background (and the engine flushes and compacts small files). The
// parent kills it with SIGKILL, reopens everything and checks that no older
// put of a key ever shows: a key whose delete was acknowledged reads as
// absent, one whose second put was acknowledged reads as that put (or
// absent, if its delete was in flight), and no key ever reads its first
// put once the second was acknowledged. A collection that removed a delete
// record apart from the versions under it would show the older put after a
// crash between the two. Repeated with kill points at different delays on
// one directory; each reopen also collects again and checks again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/transaction.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

EngineOptions CrashEngineOptions() {
  EngineOptions o;
  o.wal_segment_size = 1 << 20;
  o.write_buffer_size = 64 << 10;  // the kill also lands on flushes
  o.level0_compaction_trigger = 2;  // and compactions
  return o;
}

void WriteLine(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(6);
}

std::string Key(int round, int seq) { return "k" + std::to_string(round) + "-" + std::to_string(seq); }

Status SetOrErase(TransactionDB* db, const std::string& key, const char* value) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db->Begin());
  STRATA_RETURN_IF_ERROR(value != nullptr ? t->Set("t", key, "c", value) : t->Erase("t", key, "c"));
  return t->Commit();
}

[[noreturn]] void RunChild(const std::string& dir, int round, int fd) {
  auto engine = Engine::Open(dir + "/db", CrashEngineOptions());
  if (!engine.ok()) ::_exit(3);
  auto services = TransactionServices::Open(dir + "/services");
  if (!services.ok()) ::_exit(4);
  TransactionDBOptions options;
  options.sync = true;
  options.max_inline_value = 0;  // values in `data`: collected too
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), options);
  if (!db.ok()) ::_exit(4);
  auto gc = GarbageCollector::Open(*services, db->get(),
                                   {.life_time_millis = 0, .interval_millis = 1, .workers = 1});
  if (!gc.ok()) {
    std::fprintf(stderr, "child: gc: %s\n", gc.status().ToString().c_str());
    ::_exit(5);
  }
  std::thread compactor([&] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!(*engine)->Compact().ok()) ::_exit(7);
    }
  });
  for (int seq = 0;; ++seq) {
    const std::string key = Key(round, seq);
    for (const char* step : {"old", "new", static_cast<const char*>(nullptr)}) {
      Status s = SetOrErase(db->get(), key, step);
      if (!s.ok()) {
        std::fprintf(stderr, "child: %s: %s\n", key.c_str(), s.ToString().c_str());
        ::_exit(8);
      }
      if (step != nullptr && std::string(step) == "old") continue;
      WriteLine(fd, (step != nullptr ? "N " : "D ") + key + "\n");
    }
  }
}

class GcCrashTest : public ::testing::Test {
 protected:
  void Open() {
    auto engine = Engine::Open(dir_.Join("db"), CrashEngineOptions());
    ASSERT_OK(engine);
    engine_ = std::move(engine).value();
    auto services = TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    services_ = *services;
    auto db = TransactionDB::Open(services_, *engine_->OpenTenant("t"));
    ASSERT_OK(db);
    db_ = std::move(db).value();
    auto gc = GarbageCollector::Open(services_, db_.get(),
                                     {.life_time_millis = 0, .interval_millis = 0});
    ASSERT_OK(gc);
    gc_ = std::move(gc).value();
  }
  void Close() {
    if (gc_) {
      ASSERT_OK(gc_->Close());
    }
    gc_.reset();
    if (db_) {
      ASSERT_OK(db_->Close());
    }
    db_.reset();
    services_.reset();
    if (engine_) {
      ASSERT_OK(engine_->Close());
    }
    engine_.reset();
  }
  void TearDown() override { Close(); }

  // "<none>" for an absent key.
  std::string Read(const std::string& key) {
    auto t = db_->Begin();
    EXPECT_OK(t);
    Result<std::string> v = (*t)->Get("t", key, "c");
    if (v.status().IsNotFound()) return "<none>";
    EXPECT_OK(v);
    return v.ok() ? *v : "<error " + v.status().ToString() + ">";
  }

  void Check(const std::map<std::string, char>& reported) {
    for (const auto& [key, last] : reported) {
      const std::string v = Read(key);
      if (last == 'D') {
        EXPECT_EQ(v, "<none>") << key << ": deleted";
      } else {
        EXPECT_TRUE(v == "new" || v == "<none>") << key << ": " << v;
      }
    }
  }

  test::ScratchDir dir_{"gc_crash"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<TransactionDB> db_;
  std::unique_ptr<GarbageCollector> gc_;
};

TEST_F(GcCrashTest, NoOlderPutShowsAfterAKillDuringCollection) {
  {
    auto engine = Engine::Open(dir_.Join("db"), CrashEngineOptions());
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("t"));
    auto services = TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"));
    ASSERT_OK(db);
    ASSERT_OK((*db)->CreateTable("t"));
    ASSERT_OK((*db)->Close());
    ASSERT_OK((*engine)->Close());
  }
  std::map<std::string, char> reported;  // key -> last acknowledged: 'N' or 'D'
  const int rounds = test::LongTests() ? 12 : 4;
  for (int round = 0; round < rounds; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::KilledChild killed = test::RunChildUntilKilled(
        [&](int fd) { RunChild(dir_.path(), round, fd); }, 100 + 150 * round);
    ASSERT_EQ(killed.error, "") << killed.output;
    std::istringstream lines(killed.output);
    std::string kind, key;
    size_t n = 0;
    while (lines >> kind >> key) {
      reported[key] = kind[0];
      n++;
    }
    ASSERT_GT(n, 0u);
    std::printf("round %d: %zu acknowledged writes reported\n", round, n);
    Open();
    Check(reported);
    // Collect again after the crash, and check again.
    ASSERT_OK(gc_->RunOnce());
    ASSERT_OK(engine_->Compact());
    Check(reported);
    Close();
  }
}

}  // namespace
}  // namespace strata
