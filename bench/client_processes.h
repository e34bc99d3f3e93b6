// What the benchmarks that run client processes share (tso_bench,
// rados_transfer_bench): list flags, a forked client's per-thread results
// written to a file and summed by the parent (calls/s, p50/p99 latency), and
// the local cluster of scripts/local-cluster.sh.
//
// Results file: per thread, four uint64 (calls, failures, aux, n) then n
// uint32 latencies in nanoseconds. `aux` is the benchmark's own count. A
// record whose aux is kTotalsRecord is no thread's but the process's own
// two totals (in calls and failures, with no latencies), summed apart.
#ifndef STRATA_BENCH_CLIENT_PROCESSES_H_
#define STRATA_BENCH_CLIENT_PROCESSES_H_

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace strata::bench {

// "1,2,4" -> {1, 2, 4}; each 1 to 1024. False for anything else.
inline bool ParseList(const std::string& s, std::vector<int>* out) {
  out->clear();
  size_t start = 0;
  while (start < s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? s.npos : comma - start);
    const int v = std::atoi(part.c_str());
    if (v <= 0 || v > 1024) return false;
    out->push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return !out->empty();
}

// The flag at argv[*i]: "--name=value", or "--name value" (which takes the
// next argument too, moving *i on). A flag with no value gets "".
inline void NextFlag(int argc, char** argv, int* i, std::string* name, std::string* value) {
  const std::string arg = argv[*i];
  const size_t eq = arg.find('=');
  *name = arg.substr(0, eq);
  value->clear();
  if (eq != std::string::npos) {
    *value = arg.substr(eq + 1);
  } else if (*i + 1 < argc) {
    *value = argv[++*i];
  }
}

inline int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline constexpr uint64_t kTotalsRecord = UINT64_MAX;

// What one client thread measured.
struct ThreadResult {
  uint64_t calls = 0;
  uint64_t failures = 0;
  uint64_t aux = 0;
  std::vector<uint32_t> latency_ns;

  void Add(int64_t took_ns, bool ok) {
    ++calls;
    if (!ok) ++failures;
    latency_ns.push_back(static_cast<uint32_t>(std::min<int64_t>(took_ns, UINT32_MAX)));
  }
};

// Writes `per` to `path`; false on an I/O error.
inline bool WriteResults(const std::string& path, const std::vector<ThreadResult>& per) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = true;
  for (const ThreadResult& r : per) {
    const uint64_t head[4] = {r.calls, r.failures, r.aux, r.latency_ns.size()};
    ok = ok && std::fwrite(head, sizeof(head), 1, f) == 1;
    ok = ok && (r.latency_ns.empty() || std::fwrite(r.latency_ns.data(), 4, r.latency_ns.size(),
                                                    f) == r.latency_ns.size());
  }
  return std::fclose(f) == 0 && ok;
}

struct Measured {
  uint64_t calls = 0;
  double per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  uint64_t failures = 0;
  uint64_t aux = 0;
  uint64_t totals[2] = {0, 0};  // the kTotalsRecord records' sums
  bool ok = true;
};

// Waits for `pids` (false if one did not exit 0), then sums the results
// files `paths` over `seconds`.
inline Measured CollectResults(const char* tool, const std::vector<pid_t>& pids,
                               const std::vector<std::string>& paths, double seconds) {
  Measured m;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "%s: a client process failed (status %d)\n", tool, status);
      m.ok = false;
    }
  }
  std::vector<uint32_t> all;
  for (size_t p = 0; p < paths.size() && m.ok; ++p) {
    FILE* in = std::fopen(paths[p].c_str(), "rb");
    if (in == nullptr) {
      m.ok = false;
      break;
    }
    uint64_t head[4];
    while (std::fread(head, sizeof(head), 1, in) == 1) {
      if (head[2] == kTotalsRecord) {
        m.totals[0] += head[0];
        m.totals[1] += head[1];
        continue;
      }
      m.calls += head[0];
      m.failures += head[1];
      m.aux += head[2];
      const size_t n = all.size();
      all.resize(n + head[3]);
      if (head[3] > 0 && std::fread(all.data() + n, 4, head[3], in) != head[3]) m.ok = false;
    }
    std::fclose(in);
  }
  if (!all.empty()) {
    std::sort(all.begin(), all.end());
    m.p50_us = all[all.size() / 2] / 1000.0;
    m.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)] / 1000.0;
  }
  m.per_second = static_cast<double>(m.calls) / seconds;
  return m;
}

// Runs `scripts/local-cluster.sh <args>` and returns the NAME=VALUE lines it
// printed; empty when it failed.
inline std::map<std::string, std::string> RunClusterScript(const std::string& args) {
  const std::string cmd = std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh " + args;
  FILE* out = ::popen(cmd.c_str(), "r");
  std::map<std::string, std::string> vars;
  char line[512];
  while (out != nullptr && std::fgets(line, sizeof(line), out) != nullptr) {
    std::string s(line);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    const size_t eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (out == nullptr || ::pclose(out) != 0) vars.clear();
  return vars;
}

}  // namespace strata::bench

#endif  // STRATA_BENCH_CLIENT_PROCESSES_H_
