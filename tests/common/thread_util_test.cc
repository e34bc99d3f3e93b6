#include "common/thread_util.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "common/file_system.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

std::string Comm(long tid) {
  std::string comm;
  EXPECT_OK(ReadFileToString(FileSystem::Default(),
                             "/proc/self/task/" + std::to_string(tid) + "/comm", &comm));
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

TEST(ThreadUtilTest, NamesAndNiceBelongToTheCallingThreadAlone) {
  const long main_tid = syscall(SYS_gettid);
  const std::string main_comm = Comm(main_tid);
  const int main_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(main_tid));
  std::thread t([&] {
    const long tid = syscall(SYS_gettid);
    SetCurrentThreadName("strata-a-very-long-name");
    EXPECT_EQ(Comm(tid), "strata-a-very-l");  // cut to 15 bytes
    ASSERT_OK(SetCurrentThreadNice(7));
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(tid)), 7);
  });
  t.join();
  EXPECT_EQ(Comm(main_tid), main_comm);
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(main_tid)), main_nice);
}

TEST(ThreadUtilTest, BatchSchedulingBelongsToTheCallingThreadAndKeepsItsNice) {
  const int main_policy = sched_getscheduler(0);
  Status s;
  int policy = -1;
  int nice = -1;
  std::thread t([&] {
    ASSERT_OK(SetCurrentThreadNice(19));
    s = SetCurrentThreadBatchScheduling();
    policy = sched_getscheduler(0);
    nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  });
  t.join();
  EXPECT_EQ(sched_getscheduler(0), main_policy);
  EXPECT_EQ(nice, 19);
  if (main_policy != SCHED_OTHER) {
    // Inherited from a process run under another policy: left as it is.
    EXPECT_TRUE(s.IsFailedPrecondition()) << s.ToString();
    EXPECT_EQ(policy, main_policy);
    return;
  }
  if (!s.ok()) GTEST_SKIP() << "the kernel refuses SCHED_BATCH here: " << s.ToString();
  EXPECT_EQ(policy, SCHED_BATCH);
}

}  // namespace
}  // namespace strata
