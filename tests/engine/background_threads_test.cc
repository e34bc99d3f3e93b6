// The engine's background threads: their names, and the nice value and
// scheduling policy that EngineOptions gives them.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "common/thread_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

// Nice value and scheduling policy of each thread of this process, by name.
struct ThreadSched {
  int nice;
  int policy;
  bool operator==(const ThreadSched&) const = default;
};

std::map<std::string, std::vector<ThreadSched>> ThreadsByName() {
  std::map<std::string, std::vector<ThreadSched>> by_name;
  std::vector<std::string> tids;
  EXPECT_OK(FileSystem::Default()->GetChildren("/proc/self/task", &tids));
  for (const std::string& tid : tids) {
    std::string comm;
    if (!ReadFileToString(FileSystem::Default(), "/proc/self/task/" + tid + "/comm", &comm).ok()) {
      continue;  // the thread ended
    }
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    const int id = std::stoi(tid);
    by_name[comm].push_back({getpriority(PRIO_PROCESS, static_cast<id_t>(id)),
                             sched_getscheduler(static_cast<pid_t>(id))});
  }
  return by_name;
}

// The background threads carry names; background_priority sets their policy
// to SCHED_BATCH (kBatch, the default, and kLow) and their nice value to 19
// (kLow). Otherwise they keep what they inherit from the thread that opened
// the engine. A value outside the enum is refused.
TEST(EngineThreadsTest, BackgroundThreadsAreNamedNicedAndBatchScheduled) {
  ScratchDir dir("threads");
  const int caller_policy = sched_getscheduler(0);
  const int caller_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  // Whether a thread may move to SCHED_BATCH here (some sandboxes refuse,
  // and a caller under another policy keeps it).
  bool batch_allowed = false;
  std::thread([&] { batch_allowed = SetCurrentThreadBatchScheduling().ok(); }).join();
  for (const BackgroundPriority priority :
       {BackgroundPriority::kLow, BackgroundPriority::kBatch, BackgroundPriority::kNormal}) {
    SCOPED_TRACE(static_cast<int>(priority));
    EngineOptions options;
    options.background_priority = priority;
    options.max_background_compactions = 2;
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_OK(engine);
    const bool batch = priority != BackgroundPriority::kNormal;
    const ThreadSched want{priority == BackgroundPriority::kLow ? 19 : caller_nice,
                           batch && batch_allowed ? SCHED_BATCH : caller_policy};
    const std::map<std::string, size_t> threads = {
        {"strata-flush", 1}, {"strata-compact", 2}, {"strata-split", 1}};
    // The threads set their name, nice value and policy as they start.
    std::map<std::string, std::vector<ThreadSched>> by_name;
    for (int attempt = 0; attempt < 500; attempt++) {
      by_name = ThreadsByName();
      bool all = true;
      for (const auto& [name, count] : threads) {
        all = all && by_name[name] == std::vector<ThreadSched>(count, want);
      }
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (const auto& [name, count] : threads) {
      SCOPED_TRACE(name);
      ASSERT_EQ(by_name[name].size(), count);
      for (const ThreadSched& t : by_name[name]) {
        EXPECT_EQ(t.nice, want.nice);
        EXPECT_EQ(t.policy, want.policy);
      }
    }
    // The caller's own thread is left as it was.
    EXPECT_EQ(sched_getscheduler(0), caller_policy);
    ASSERT_OK((*engine)->Close());
  }

  EngineOptions options;
  for (int bad : {3, 255}) {
    options.background_priority = static_cast<BackgroundPriority>(bad);
    EXPECT_TRUE(Engine::Open(dir.path(), options).status().IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace strata
