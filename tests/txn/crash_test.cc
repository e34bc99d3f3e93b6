// Crash test of the persisted services: a child process takes timestamps on
// several threads (with a window so short that ceiling writes are always in
// flight, and one thread taking big batches so that timestamps run ahead of
// the clock) and reports them, and its liveness instance id, through a pipe; the
// parent kills it with SIGKILL, reopens both services on the same directory
// and checks that nothing handed out before the kill comes back: every new
// timestamp is above every reported one, every new instance id above the
// child's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/random.h"
#include "txn/local_liveness_registry.h"
#include "txn/local_timestamp_oracle.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

// One report through the pipe: tag 0 carries the instance id, tag t > 0 a
// timestamp taken by child thread t.
struct Report {
  uint64_t tag;
  uint64_t value;
};
static_assert(sizeof(Report) == 16);
// Reports are written in chunks of at most PIPE_BUF bytes, which the pipe
// keeps whole, so the parent never sees half a report even after the kill.
constexpr int kReportsPerWrite = PIPE_BUF / sizeof(Report);
constexpr int kChildThreads = 4;

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The child: never returns.
[[noreturn]] void RunChild(const std::string& dir, int fd) {
  std::unique_ptr<LocalLivenessRegistry> registry;
  if (!LocalLivenessRegistry::Open(dir, {}, &registry).ok()) ::_exit(2);
  Report hello{0, registry->instance_id()};
  if (!WriteAll(fd, &hello, sizeof(hello))) ::_exit(3);

  LocalTimestampOracleOptions options;
  options.window_millis = 5;  // ceiling writes all the time
  std::unique_ptr<LocalTimestampOracle> oracle;
  if (!LocalTimestampOracle::Open(dir, options, &oracle).ok()) ::_exit(4);
  std::vector<std::thread> threads;
  for (int t = 1; t <= kChildThreads; t++) {
    threads.emplace_back([&, t] {
      Report buf[kReportsPerWrite];
      uint64_t i = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (std::chrono::steady_clock::now() < deadline) {  // killed long before
        for (int k = 0; k < kReportsPerWrite; k++, i++) {
          uint64_t ts = 0;
          // Thread 1 takes half a millisecond's worth at a time, so that the
          // timestamps run ahead of the clock and, at the kill, only the
          // ceiling knows how far they went.
          const uint32_t n = t == 1 ? TimestampOracle::kMaxBatch / 2 : (i % 5 == 4 ? 7 : 1);
          if (n > 1) {
            if (!oracle->GetTimestamps(n, &ts).ok()) ::_exit(5);
            ts += n - 1;  // report the last of the batch
          } else {
            Result<uint64_t> r = oracle->GetTimestamp();
            if (!r.ok()) ::_exit(5);
            ts = *r;
          }
          buf[k] = Report{static_cast<uint64_t>(t), ts};
        }
        if (!WriteAll(fd, buf, sizeof(buf))) ::_exit(6);
      }
      ::_exit(7);
    });
  }
  for (auto& th : threads) th.join();
  ::_exit(8);
}

TEST(TxnCrashTest, SigkillNeverReissuesTimestampsOrInstanceIds) {
  test::ScratchDir dir("txn-crash");
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const int cycles = test::LongTests() ? 30 : 4;
  uint64_t max_ts = 0;
  uint64_t max_instance = 0;

  for (int cycle = 0; cycle < cycles; cycle++) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunChild(dir.path(), fds[1]);
    }
    ::close(fds[1]);

    // Read a varying number of reports, kill, then drain what is left.
    const size_t kill_after = 20'000 + rnd.Uniform(60'000);
    std::vector<Report> reports;
    std::vector<char> buf(1 << 16);
    size_t have = 0;  // bytes in buf
    bool killed = false;
    while (true) {
      ssize_t r = ::read(fds[0], buf.data() + have, buf.size() - have);
      if (r < 0 && errno == EINTR) continue;
      ASSERT_GE(r, 0) << std::strerror(errno);
      if (r == 0) break;
      have += static_cast<size_t>(r);
      const size_t whole = have / sizeof(Report);
      for (size_t i = 0; i < whole; i++) {
        Report rep;
        std::memcpy(&rep, buf.data() + i * sizeof(Report), sizeof(Report));
        reports.push_back(rep);
      }
      std::memmove(buf.data(), buf.data() + whole * sizeof(Report), have % sizeof(Report));
      have %= sizeof(Report);
      if (!killed && reports.size() >= kill_after) {
        std::this_thread::sleep_for(std::chrono::microseconds(rnd.Uniform(3000)));
        ASSERT_EQ(::kill(pid, SIGKILL), 0);
        killed = true;
      }
    }
    ::close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "child ended on its own, status " << wstatus;
    EXPECT_EQ(have, 0u) << "a report was cut in half";

    // What the child handed out.
    ASSERT_FALSE(reports.empty());
    ASSERT_EQ(reports[0].tag, 0u);
    EXPECT_GT(reports[0].value, max_instance);
    max_instance = reports[0].value;
    std::map<uint64_t, uint64_t> last_of_thread;
    std::vector<uint64_t> all;
    for (size_t i = 1; i < reports.size(); i++) {
      const Report& rep = reports[i];
      ASSERT_GE(rep.tag, 1u);
      ASSERT_LE(rep.tag, static_cast<uint64_t>(kChildThreads));
      ASSERT_GT(rep.value, max_ts) << "at or below a timestamp handed out before a restart";
      uint64_t& last = last_of_thread[rep.tag];
      ASSERT_GT(rep.value, last) << "thread " << rep.tag << " went backwards";
      last = rep.value;
      all.push_back(rep.value);
    }
    std::sort(all.begin(), all.end());
    ASSERT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end());
    max_ts = all.back();

    // Reopen here: both services start above everything the child had.
    {
      std::unique_ptr<LocalLivenessRegistry> registry;
      ASSERT_OK(LocalLivenessRegistry::Open(dir.path(), {}, &registry));
      EXPECT_GT(registry->instance_id(), max_instance);
      max_instance = registry->instance_id();
      std::unique_ptr<LocalTimestampOracle> oracle;
      ASSERT_OK(LocalTimestampOracle::Open(dir.path(), {}, &oracle));
      Result<uint64_t> ts = oracle->GetTimestamp();
      ASSERT_OK(ts);
      EXPECT_GT(*ts, max_ts);
      max_ts = *ts;
    }
  }
}

}  // namespace
}  // namespace strata::txn
