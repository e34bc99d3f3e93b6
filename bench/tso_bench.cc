// tso_bench: the timestamp service (cluster/tso_server.h) against the raw
// etcd round trip, in one run.
//
// For each number of client processes (--processes) and threads per
// process (--threads), the clients call TsoClient::GetTimestamp in a loop
// for --seconds, and the same threads then make single-key etcd reads
// (EtcdClient::Get, one round trip each): timestamps/s and reads/s across
// processes, with p50/p99 latency of one call. The service is one
// `strata-tso` daemon; etcd is the one at --etcd or, by default, a local one
// started with scripts/local-cluster.sh. Then --failovers times: two
// daemons, the leader SIGKILLed while a client calls in a loop, and the time
// from the kill to the next timestamp served.
//
//   tso_bench [--etcd URL] [--processes 1,4] [--threads 1,4,16]
//             [--seconds 3] [--failovers 3] [--lease-ttl 2]
//
// Exit code 0, or 1 when a call failed or a check did not hold (a timestamp
// handed out twice or out of order within a thread), 2 for bad arguments.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "client_processes.h"
#include "cluster/etcd_client.h"
#include "cluster/tso_client.h"
#include "cluster/tso_protocol.h"

namespace strata::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Flags {
  std::string etcd;
  std::vector<int> processes = {1, 4};
  std::vector<int> threads = {1, 4, 16};
  int seconds = 3;
  int failovers = 3;
  int lease_ttl = 2;
};

const char kUsage[] =
    "usage: tso_bench [--etcd URL] [--processes 1,4] [--threads 1,4,16]\n"
    "                 [--seconds 3] [--failovers 3] [--lease-ttl 2]\n"
    "Timestamps/s and latency of the timestamp service against the raw etcd\n"
    "round trip with the same clients, then leader failover times. Without\n"
    "--etcd a local etcd is started (scripts/local-cluster.sh) and stopped.\n";

enum class Op { kTimestamp, kEtcdGet };

// Runs in a forked child: `threads` threads call `op` for `seconds` and the
// results go to `path`.
[[noreturn]] void ClientProcess(const std::string& etcd, Op op, int threads, int seconds,
                                const std::string& path) {
  EtcdOptions eo;
  eo.endpoints = {etcd};
  TsoClientOptions to;
  to.etcd = eo;
  Result<std::unique_ptr<TsoClient>> tso = TsoClient::Open(to);
  Result<std::unique_ptr<EtcdClient>> client = EtcdClient::Open(eo);
  if (!tso.ok() || !client.ok()) _exit(3);
  // Warm up: the leader is found, the connections are made.
  if (!(*tso)->GetTimestamp().ok() || !(*client)->Get(tso::LeaderKey("/strata")).ok()) _exit(4);
  std::vector<bench::ThreadResult> per(threads);
  std::vector<std::thread> workers;
  const auto end = SteadyClock::now() + std::chrono::seconds(seconds);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      bench::ThreadResult& r = per[t];
      r.latency_ns.reserve(1 << 20);
      uint64_t last = 0;
      while (SteadyClock::now() < end) {
        const int64_t start = bench::NowNanos();
        bool ok;
        if (op == Op::kTimestamp) {
          Result<uint64_t> ts = (*tso)->GetTimestamp();
          ok = ts.ok();
          if (ok && *ts <= last) ++r.aux;  // out of order
          if (ok) last = *ts;
        } else {
          ok = (*client)->Get(tso::LeaderKey("/strata")).ok();
        }
        r.Add(bench::NowNanos() - start, ok);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  _exit(bench::WriteResults(path, per) ? 0 : 6);
}

bench::Measured RunClients(const Flags& f, Op op, int processes, int threads,
                           const std::string& dir) {
  std::vector<pid_t> pids;
  std::vector<std::string> paths;
  for (int p = 0; p < processes; ++p) {
    paths.push_back(dir + "/client" + std::to_string(p));
    const pid_t pid = fork();
    if (pid == 0) ClientProcess(f.etcd, op, threads, f.seconds, paths.back());
    pids.push_back(pid);
  }
  return bench::CollectResults("tso_bench", pids, paths, f.seconds);
}

pid_t StartDaemon(const Flags& f, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const std::string ttl = std::to_string(f.lease_ttl);
    execl(STRATA_TSO_BINARY, "strata-tso", "--etcd", f.etcd.c_str(), "--lease-ttl", ttl.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

bool WaitForLeader(EtcdClient& etcd, const std::string& not_this, int millis, std::string* leader) {
  const auto end = SteadyClock::now() + std::chrono::milliseconds(millis);
  while (SteadyClock::now() < end) {
    Result<KeyValue> kv = etcd.Get(tso::LeaderKey("/strata"));
    if (kv.ok() && kv->value != not_this) {
      *leader = kv->value;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void StopDaemon(pid_t pid) {
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

int Run(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::string name, value;
    bench::NextFlag(argc, argv, &i, &name, &value);
    bool good = true;
    if (name == "--etcd") {
      f.etcd = value;
    } else if (name == "--processes") {
      good = bench::ParseList(value, &f.processes);
    } else if (name == "--threads") {
      good = bench::ParseList(value, &f.threads);
    } else if (name == "--seconds") {
      f.seconds = std::atoi(value.c_str());
      good = f.seconds > 0;
    } else if (name == "--failovers") {
      f.failovers = std::atoi(value.c_str());
      good = f.failovers >= 0 && value.find_first_not_of("0123456789") == std::string::npos;
    } else if (name == "--lease-ttl") {
      f.lease_ttl = std::atoi(value.c_str());
      good = f.lease_ttl >= 1;
    } else {
      good = false;
    }
    if (!good) {
      std::fprintf(stderr, "tso_bench: bad argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }

  std::string cluster_dir;
  if (f.etcd.empty()) {
    std::map<std::string, std::string> vars = bench::RunClusterScript("start");
    f.etcd = vars["ETCD_ENDPOINTS"];
    cluster_dir = vars["STRATA_CLUSTER_DIR"];
    if (f.etcd.empty()) {
      std::fprintf(stderr, "tso_bench: could not start a local etcd\n");
      return 1;
    }
  }
  const std::string dir =
      std::filesystem::temp_directory_path().string() + "/tso_bench." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  int rc = 0;

  EtcdOptions eo;
  eo.endpoints = {f.etcd};
  Result<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Open(eo);
  if (!etcd.ok()) return 1;
  std::printf("etcd %s; client timing on %u cores; %d s per figure\n\n", f.etcd.c_str(),
              std::thread::hardware_concurrency(), f.seconds);

  // Throughput and latency, the service against etcd's round trip.
  {
    const pid_t daemon = StartDaemon(f, dir + "/tso.log");
    std::string leader;
    if (!WaitForLeader(**etcd, "", 10000, &leader)) {
      std::fprintf(stderr, "tso_bench: no leader\n");
      StopDaemon(daemon);
      return 1;
    }
    std::printf("%-9s %-7s | %14s %9s %9s | %12s %9s %9s | %6s\n", "processes", "threads",
                "timestamps/s", "p50 us", "p99 us", "etcd gets/s", "p50 us", "p99 us", "ratio");
    for (int processes : f.processes) {
      for (int threads : f.threads) {
        bench::Measured tso = RunClients(f, Op::kTimestamp, processes, threads, dir);
        bench::Measured raw = RunClients(f, Op::kEtcdGet, processes, threads, dir);
        std::printf("%-9d %-7d | %14.0f %9.1f %9.1f | %12.0f %9.1f %9.1f | %5.1fx\n", processes,
                    threads, tso.per_second, tso.p50_us, tso.p99_us, raw.per_second, raw.p50_us,
                    raw.p99_us, raw.per_second > 0 ? tso.per_second / raw.per_second : 0);
        if (!tso.ok || !raw.ok || tso.failures + raw.failures > 0 || tso.aux > 0) {
          std::fprintf(
              stderr,
              "tso_bench: %llu failed calls, %llu out of order (processes %d, threads %d)\n",
              static_cast<unsigned long long>(tso.failures + raw.failures),
              static_cast<unsigned long long>(tso.aux), processes, threads);
          rc = 1;
        }
        std::fflush(stdout);
      }
    }
    StopDaemon(daemon);
  }

  // Failover: kill the leader while a client calls in a loop.
  if (f.failovers > 0) {
    std::printf("\nfailover (lease %d s): SIGKILL of the leader to the next timestamp served\n",
                f.lease_ttl);
    std::vector<double> gaps;
    TsoClientOptions to;
    to.etcd = eo;
    to.call_timeout_millis = static_cast<uint64_t>(f.lease_ttl) * 1000 + 5000;
    Result<std::unique_ptr<TsoClient>> client = TsoClient::Open(to);
    if (!client.ok()) return 1;
    pid_t a = StartDaemon(f, dir + "/a.log");
    std::string leader;
    if (!WaitForLeader(**etcd, "", 10000, &leader)) return 1;
    pid_t b = StartDaemon(f, dir + "/b.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int i = 0; i < f.failovers; ++i) {
      Result<uint64_t> before = (*client)->GetTimestamp();
      if (!before.ok()) {
        rc = 1;
        break;
      }
      // a leads: kill it.
      ::kill(a, SIGKILL);
      const int64_t killed = bench::NowNanos();
      ::waitpid(a, nullptr, 0);
      Result<uint64_t> next = (*client)->GetTimestamp();
      const double gap_ms = (bench::NowNanos() - killed) / 1e6;
      if (!next.ok() || *next <= *before) {
        std::fprintf(stderr, "tso_bench: failover %d: %s\n", i,
                     next.ok() ? "went backwards" : next.status().ToString().c_str());
        rc = 1;
        break;
      }
      gaps.push_back(gap_ms);
      std::printf("  failover %d: %.0f ms\n", i + 1, gap_ms);
      std::fflush(stdout);
      // The survivor leads; a fresh standby takes the killed one's place.
      a = b;
      b = StartDaemon(f, dir + "/standby" + std::to_string(i) + ".log");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (!gaps.empty()) {
      std::sort(gaps.begin(), gaps.end());
      std::printf("  median %.0f ms over %zu\n", gaps[gaps.size() / 2], gaps.size());
    }
    StopDaemon(a);
    StopDaemon(b);
  }

  std::filesystem::remove_all(dir);
  if (!cluster_dir.empty()) {
    const std::string stop =
        std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh stop --dir " + cluster_dir;
    if (std::system(stop.c_str()) != 0)
      std::fprintf(stderr, "tso_bench: %s failed\n", stop.c_str());
  }
  return rc;
}

}  // namespace
}  // namespace strata::cluster

int main(int argc, char** argv) { return strata::cluster::Run(argc, argv); }
