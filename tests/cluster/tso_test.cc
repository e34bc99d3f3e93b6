#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "cluster/local_etcd.h"
#include "cluster/socket_util.h"
#include "cluster/tso_client.h"
#include "cluster/tso_protocol.h"
#include "cluster/tso_server.h"
#include "txn/timestamp.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

TsoServerOptions ServerOptions(const LocalEtcd& etcd) {
  TsoServerOptions o;
  o.etcd.endpoints = {etcd.endpoint()};
  o.etcd.call_timeout_millis = 1000;
  o.lease_ttl_seconds = 2;
  o.window_millis = 1000;
  return o;
}

TsoClientOptions ClientOptions(const LocalEtcd& etcd, uint64_t timeout_millis = 8000) {
  TsoClientOptions o;
  o.etcd.endpoints = {etcd.endpoint()};
  o.etcd.call_timeout_millis = 1000;
  o.call_timeout_millis = timeout_millis;
  return o;
}

bool WaitFor(const std::function<bool()>& done, int millis) {
  const auto end = SteadyClock::now() + std::chrono::milliseconds(millis);
  while (SteadyClock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::unique_ptr<LocalEtcd> StartEtcd() {
  Result<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
  EXPECT_OK(etcd);
  return etcd.ok() ? std::move(etcd).value() : nullptr;
}

TEST(TsoTest, ServesIncreasingTimestampsBelowTheDurableBound) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  Result<std::unique_ptr<TsoServer>> server = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(server);
  ASSERT_TRUE(WaitFor([&] { return (*server)->stats().leader; }, 5000));
  Result<std::unique_ptr<TsoClient>> client = TsoClient::Open(ClientOptions(*etcd));
  ASSERT_OK(client);

  uint64_t last = 0;
  const uint64_t wall_before =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  for (int i = 0; i < 2000; ++i) {
    Result<uint64_t> ts = (*client)->GetTimestamp();
    ASSERT_OK(ts);
    ASSERT_GT(*ts, last);
    last = *ts;
  }
  EXPECT_GE(txn::PhysicalMillis(last), wall_before);
  uint64_t first = 0;
  ASSERT_OK((*client)->GetTimestamps(1000, &first));
  EXPECT_GT(first, last);
  ASSERT_OK((*client)->GetTimestamps(txn::TimestampOracle::kMaxBatch, &first));
  EXPECT_EQ((*client)->GetTimestamps(0, &first).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ((*client)->GetTimestamps(txn::TimestampOracle::kMaxBatch + 1, &first).code(),
            Status::Code::kInvalidArgument);

  // The bound in etcd is above everything handed out, and the leader key
  // names this server.
  Result<std::unique_ptr<EtcdClient>> etcd_client = EtcdClient::Open(ServerOptions(*etcd).etcd);
  ASSERT_OK(etcd_client);
  Result<KeyValue> leader = (*etcd_client)->Get(tso::LeaderKey("/strata"));
  ASSERT_OK(leader);
  EXPECT_EQ(leader->value, (*server)->address());
  EXPECT_NE(leader->lease, 0);
  Result<KeyValue> bound = (*etcd_client)->Get(tso::BoundKey("/strata"));
  ASSERT_OK(bound);
  EXPECT_GT(std::stoull(bound->value), (*server)->stats().last_physical);

  // Stopping resigns: the leader key goes at once, not after the lease.
  (*server)->Stop();
  EXPECT_EQ((*etcd_client)->Get(tso::LeaderKey("/strata")).status().code(),
            Status::Code::kNotFound);
}

TEST(TsoTest, ConcurrentCallsAreBatchedAndUnique) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  Result<std::unique_ptr<TsoServer>> server = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(server);
  Result<std::unique_ptr<TsoClient>> client = TsoClient::Open(ClientOptions(*etcd));
  ASSERT_OK(client);
  constexpr int kThreads = 8, kCalls = 1000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        uint64_t first = 0;
        const uint32_t n = 1 + static_cast<uint32_t>(i % 3);
        Status s = (*client)->GetTimestamps(n, &first);
        if (!s.ok()) {
          ADD_FAILURE() << s.ToString();
          return;
        }
        for (uint32_t k = 0; k < n; ++k) got[t].push_back(first + k);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> all;
  size_t total = 0;
  for (const std::vector<uint64_t>& g : got) {
    EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
    all.insert(g.begin(), g.end());
    total += g.size();
  }
  EXPECT_EQ(all.size(), total);  // no timestamp twice
  // Calls that waited for a request on the wire went out together.
  EXPECT_LE((*client)->requests(), static_cast<uint64_t>(kThreads * kCalls));
}

TEST(TsoTest, AnotherMemberTakesOverWhenTheLeaderResigns) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  Result<std::unique_ptr<TsoServer>> a = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(a);
  ASSERT_TRUE(WaitFor([&] { return (*a)->stats().leader; }, 5000));
  Result<std::unique_ptr<TsoServer>> b = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(b);
  Result<std::unique_ptr<TsoClient>> client = TsoClient::Open(ClientOptions(*etcd));
  ASSERT_OK(client);
  Result<uint64_t> before = (*client)->GetTimestamp();
  ASSERT_OK(before);
  EXPECT_FALSE((*b)->stats().leader);
  (*a)->Stop();
  ASSERT_TRUE(WaitFor([&] { return (*b)->stats().leader; }, 5000));
  Result<uint64_t> after = (*client)->GetTimestamp();
  ASSERT_OK(after);
  EXPECT_GT(*after, *before);
  // The new leader started above the old one's durable bound.
  EXPECT_GT(txn::PhysicalMillis(*after), (*a)->stats().bound_millis - 1);
}

TEST(TsoTest, StopsServingWhenEtcdIsUnreachable) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  Result<std::unique_ptr<TsoServer>> server = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(server);
  ASSERT_TRUE(WaitFor([&] { return (*server)->stats().leader; }, 5000));
  constexpr uint64_t kDeadlineMillis = 1000;
  Result<std::unique_ptr<TsoClient>> client =
      TsoClient::Open(ClientOptions(*etcd, kDeadlineMillis));
  ASSERT_OK(client);
  ASSERT_OK((*client)->GetTimestamp());

  etcd->Pause();
  // The leader goes on until its lease may have run out, then stops; the
  // calls after that fail within their deadline.
  uint64_t handed_out = 0;
  Status failure;
  int64_t failed_call_millis = 0;
  const auto start = SteadyClock::now();
  while (SteadyClock::now() - start < std::chrono::seconds(10)) {
    const auto call = SteadyClock::now();
    Result<uint64_t> ts = (*client)->GetTimestamp();
    if (!ts.ok()) {
      failure = ts.status();
      failed_call_millis =
          std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - call).count();
      break;
    }
    handed_out = std::max(handed_out, *ts);
  }
  ASSERT_FALSE(failure.ok()) << "timestamps kept coming with etcd frozen";
  EXPECT_EQ(failure.code(), Status::Code::kTimedOut) << failure.ToString();
  EXPECT_NE(failure.message().find("timestamp service"), std::string::npos) << failure.ToString();
  EXPECT_LT(failed_call_millis, static_cast<int64_t>(kDeadlineMillis) + 500);
  // Lease of 2 s: serving stopped well within it.
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(4));
  EXPECT_FALSE((*server)->stats().leader && (*client)->GetTimestamp().ok());
  etcd->Resume();

  // Nothing handed out reached the bound etcd holds.
  Result<std::unique_ptr<EtcdClient>> etcd_client = EtcdClient::Open(ServerOptions(*etcd).etcd);
  ASSERT_OK(etcd_client);
  Result<KeyValue> bound = (*etcd_client)->Get(tso::BoundKey("/strata"));
  ASSERT_OK(bound);
  EXPECT_LT(txn::PhysicalMillis(handed_out), std::stoull(bound->value));
  // And the service recovers: a later timestamp is above all of them.
  Result<std::unique_ptr<TsoClient>> again = TsoClient::Open(ClientOptions(*etcd));
  ASSERT_OK(again);
  Result<uint64_t> later = (*again)->GetTimestamp();
  ASSERT_OK(later);
  EXPECT_GT(*later, handed_out);
}

TEST(TsoTest, ABoundItDidNotWriteStopsAMemberFromServing) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  Result<std::unique_ptr<EtcdClient>> client = EtcdClient::Open(ServerOptions(*etcd).etcd);
  ASSERT_OK(client);
  ASSERT_OK((*client)->Put(tso::BoundKey("/strata"), "not a number"));
  Result<std::unique_ptr<TsoServer>> server = TsoServer::Start(ServerOptions(*etcd));
  ASSERT_OK(server);
  ASSERT_TRUE(WaitFor([&] { return !(*server)->stats().last_error.empty(); }, 5000));
  EXPECT_FALSE((*server)->stats().leader);
  EXPECT_NE((*server)->stats().last_error.find("holds no bound"), std::string::npos)
      << (*server)->stats().last_error;
  Result<std::unique_ptr<TsoClient>> tso = TsoClient::Open(ClientOptions(*etcd, 500));
  ASSERT_OK(tso);
  EXPECT_FALSE((*tso)->GetTimestamp().ok());
}

TEST(TsoTest, RefusesBadOptions) {
  TsoServerOptions o;
  o.etcd.endpoints = {"127.0.0.1:1"};
  o.lease_ttl_seconds = 0;
  EXPECT_EQ(TsoServer::Start(o).status().code(), Status::Code::kInvalidArgument);
  o.lease_ttl_seconds = 3;
  o.window_millis = 10;
  EXPECT_EQ(TsoServer::Start(o).status().code(), Status::Code::kInvalidArgument);
  o.window_millis = 1000;
  o.listen = "nowhere";
  EXPECT_EQ(TsoServer::Start(o).status().code(), Status::Code::kInvalidArgument);
  o.listen = "127.0.0.1:0";
  o.etcd.endpoints.clear();
  EXPECT_EQ(TsoServer::Start(o).status().code(), Status::Code::kInvalidArgument);
  TsoClientOptions c;
  EXPECT_EQ(TsoClient::Open(c).status().code(), Status::Code::kInvalidArgument);
  c.etcd.endpoints = {"127.0.0.1:1"};
  c.call_timeout_millis = 0;
  EXPECT_EQ(TsoClient::Open(c).status().code(), Status::Code::kInvalidArgument);
}

// strata-tso's command line: --help, bad arguments, a listen address in use.
int RunTso(const std::string& args, std::string* output) {
  const std::string cmd = std::string(STRATA_TSO_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  output->clear();
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(StrataTsoToolTest, HelpBadArgumentsAndATakenAddress) {
  std::string out;
  EXPECT_EQ(RunTso("--help", &out), 0);
  EXPECT_NE(out.find("usage: strata-tso"), std::string::npos) << out;
  EXPECT_EQ(RunTso("", &out), 2);
  EXPECT_NE(out.find("--etcd is required"), std::string::npos) << out;
  EXPECT_EQ(RunTso("--etcd 127.0.0.1:1 --lease-ttl 0", &out), 2);
  EXPECT_NE(out.find("--lease-ttl"), std::string::npos) << out;
  EXPECT_EQ(RunTso("--etcd 127.0.0.1:1 --window-ms 5", &out), 2);
  EXPECT_EQ(RunTso("--etcd 127.0.0.1:1 --bogus 1", &out), 2);
  EXPECT_NE(out.find("unknown option"), std::string::npos) << out;
  EXPECT_EQ(RunTso("--etcd 127.0.0.1:1 --listen nowhere", &out), 2);
  EXPECT_EQ(RunTso("--etcd https://127.0.0.1:1", &out), 2);
  // A port someone else listens on.
  uint16_t port = 0;
  Result<int> fd = Listen(*Endpoint::Parse("127.0.0.1:0", /*listening=*/true), &port);
  ASSERT_OK(fd);
  EXPECT_EQ(RunTso("--etcd 127.0.0.1:1 --listen 127.0.0.1:" + std::to_string(port), &out), 1);
  EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
  ::close(*fd);
}

// ---------------------------------------------------------------------------
// Processes: 4 clients × 8 threads against two strata-tso daemons, the
// leader SIGKILLed midway.

struct CallRecord {
  int64_t start_ns;
  int64_t end_ns;
  uint64_t ts;  // 0: the call failed
  uint32_t thread;
};

pid_t StartDaemon(const LocalEtcd& etcd, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const std::string endpoints = etcd.endpoint();
    execl(STRATA_TSO_BINARY, "strata-tso", "--etcd", endpoints.c_str(), "--lease-ttl", "2",
          "--window-ms", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// A client process: `threads` threads take timestamps for `millis` and
// write one CallRecord per call to `path`.
[[noreturn]] void RunClientProcess(const std::string& endpoint, const std::string& path,
                                   int threads, int millis) {
  TsoClientOptions o;
  o.etcd.endpoints = {endpoint};
  o.etcd.call_timeout_millis = 1000;
  o.call_timeout_millis = 8000;
  Result<std::unique_ptr<TsoClient>> client = TsoClient::Open(o);
  if (!client.ok()) _exit(3);
  std::vector<std::vector<CallRecord>> records(threads);
  std::vector<std::thread> workers;
  const auto end = SteadyClock::now() + std::chrono::milliseconds(millis);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      while (SteadyClock::now() < end) {
        CallRecord r{};
        r.thread = static_cast<uint32_t>(t);
        r.start_ns = NowNanos();
        Result<uint64_t> ts = (*client)->GetTimestamp();
        r.end_ns = NowNanos();
        r.ts = ts.ok() ? *ts : 0;
        records[t].push_back(r);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) _exit(4);
  for (const std::vector<CallRecord>& rs : records) {
    if (!rs.empty() && std::fwrite(rs.data(), sizeof(CallRecord), rs.size(), f) != rs.size()) {
      _exit(5);
    }
  }
  if (std::fclose(f) != 0) _exit(6);
  _exit(0);
}

TEST(TsoProcessTest, FourProcessesEightThreadsAcrossALeaderKill) {
  std::unique_ptr<LocalEtcd> etcd = StartEtcd();
  ASSERT_NE(etcd, nullptr);
  test::ScratchDir dir("tso_processes");
  const pid_t first = StartDaemon(*etcd, dir.path() + "/tso1.log");
  ASSERT_GT(first, 0);
  // The first daemon leads before the second starts.
  Result<std::unique_ptr<EtcdClient>> etcd_client = EtcdClient::Open(ServerOptions(*etcd).etcd);
  ASSERT_OK(etcd_client);
  ASSERT_TRUE(WaitFor([&] { return (*etcd_client)->Get(tso::LeaderKey("/strata")).ok(); }, 10000));
  const std::string first_address = (*etcd_client)->Get(tso::LeaderKey("/strata"))->value;
  const pid_t second = StartDaemon(*etcd, dir.path() + "/tso2.log");
  ASSERT_GT(second, 0);

  constexpr int kProcesses = 4, kThreads = 8, kMillis = 6000;
  std::vector<pid_t> clients;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      RunClientProcess(etcd->endpoint(), dir.path() + "/calls" + std::to_string(p), kThreads,
                       kMillis);
    }
    ASSERT_GT(pid, 0);
    clients.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  const int64_t killed_at = NowNanos();
  ::waitpid(first, nullptr, 0);
  for (pid_t pid : clients) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client status " << status;
  }
  // The second daemon took over.
  Result<KeyValue> leader = (*etcd_client)->Get(tso::LeaderKey("/strata"));
  ASSERT_OK(leader);
  EXPECT_NE(leader->value, first_address);
  ::kill(second, SIGTERM);
  int status = 0;
  ::waitpid(second, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  std::vector<CallRecord> calls;
  for (int p = 0; p < kProcesses; ++p) {
    FILE* f = std::fopen((dir.path() + "/calls" + std::to_string(p)).c_str(), "rb");
    ASSERT_NE(f, nullptr);
    CallRecord r;
    std::vector<CallRecord> mine;
    while (std::fread(&r, sizeof(r), 1, f) == 1) {
      r.thread += static_cast<uint32_t>(p * kThreads);
      mine.push_back(r);
    }
    std::fclose(f);
    calls.insert(calls.end(), mine.begin(), mine.end());
  }
  size_t failed = 0, after_kill = 0;
  std::set<uint64_t> seen;
  std::vector<uint64_t> last_of_thread(kProcesses * kThreads, 0);
  for (const CallRecord& c : calls) {  // per thread, in call order
    if (c.ts == 0) {
      ++failed;
      continue;
    }
    EXPECT_TRUE(seen.insert(c.ts).second) << "timestamp " << c.ts << " handed out twice";
    EXPECT_GT(c.ts, last_of_thread[c.thread]) << "thread " << c.thread << " went backwards";
    last_of_thread[c.thread] = c.ts;
    if (c.start_ns > killed_at) ++after_kill;
  }
  EXPECT_EQ(failed, 0u) << "calls failed although a member could take over within the deadline";
  EXPECT_GT(seen.size(), 1000u);
  EXPECT_GT(after_kill, 100u) << "too few calls after the kill to show the takeover";

  // Calls that do not overlap in time are ordered: for each call, every call
  // that ended before it began has a smaller timestamp.
  std::vector<CallRecord> by_end;
  for (const CallRecord& c : calls) {
    if (c.ts != 0) by_end.push_back(c);
  }
  std::sort(by_end.begin(), by_end.end(),
            [](const CallRecord& a, const CallRecord& b) { return a.end_ns < b.end_ns; });
  std::vector<uint64_t> max_ts(by_end.size());
  for (size_t i = 0; i < by_end.size(); ++i) {
    max_ts[i] = std::max(i > 0 ? max_ts[i - 1] : 0, by_end[i].ts);
  }
  size_t violations = 0;
  for (const CallRecord& c : by_end) {
    const auto it = std::lower_bound(by_end.begin(), by_end.end(), c.start_ns,
                                     [](const CallRecord& a, int64_t t) { return a.end_ns < t; });
    if (it == by_end.begin()) continue;
    const uint64_t before = max_ts[static_cast<size_t>(it - by_end.begin()) - 1];
    if (before >= c.ts) ++violations;
  }
  EXPECT_EQ(violations, 0u);
  std::printf("[ stats    ] %zu calls from %d processes x %d threads, %zu after the kill\n",
              seen.size(), kProcesses, kThreads, after_kill);
}

}  // namespace
}  // namespace strata::cluster
