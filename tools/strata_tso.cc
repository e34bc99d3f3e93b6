// strata-tso: runs one member of the timestamp service (cluster/tso_server.h)
// until SIGINT or SIGTERM, then resigns so that another member takes over at
// once. Run two or more, on different machines, for a service that survives
// the loss of one; clients find the leader through etcd.
//
// Exit codes: 0 stopped by a signal; 1 the service could not start (the
// listen address is taken, say); 2 bad arguments.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "cluster/tso_server.h"
#include "tool_util.h"

namespace strata::cluster {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: strata-tso --etcd URL[,URL...] [options]\n"
    "\n"
    "Runs one member of Strata's timestamp service until SIGINT or SIGTERM.\n"
    "The members of one cluster (same etcd, same --root) elect a leader\n"
    "through an etcd lease; the leader hands out timestamps below a bound it\n"
    "keeps durable in etcd, and clients find it under <root>/tso/leader.\n"
    "Prints its address, then a line each time it becomes leader or stops\n"
    "leading.\n"
    "\n"
    "options:\n"
    "  --etcd URLS         etcd client URLs, comma-separated (host:port or\n"
    "                      http://host:port); required\n"
    "  --listen HOST:PORT  where clients connect (default 127.0.0.1:0, any\n"
    "                      free port)\n"
    "  --advertise ADDR    the address clients are told (default: the listen\n"
    "                      host with the port it got)\n"
    "  --root PREFIX       etcd key prefix of the cluster (default /strata)\n"
    "  --lease-ttl SECS    the leader's lease, 1 to 3600 (default 3): how long\n"
    "                      timestamps stop at most when a leader dies\n"
    "  --window-ms MS      how far ahead of the clock each durable bound\n"
    "                      reaches, 100 to 60000 (default 3000)\n"
    "  --help              this text\n"
    "\n"
    "exit codes: 0 stopped by a signal, 1 could not start, 2 bad arguments\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "strata-tso: %s\n%s", why.c_str(), kUsage);
  return kExitUsage;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int Run(int argc, char** argv) {
  TsoServerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return tools::FinishOutput("strata-tso", kExitOk, kExitUsage);
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    std::optional<std::string> value = tools::OptionValue(arg, eq, argc, argv, &i);
    if (!value) return Usage("option " + name + " needs a value");
    uint64_t n = 0;
    if (name == "--etcd") {
      options.etcd.endpoints = SplitComma(*value);
    } else if (name == "--listen") {
      options.listen = *value;
    } else if (name == "--advertise") {
      options.advertise = *value;
    } else if (name == "--root") {
      options.root = *value;
    } else if (name == "--lease-ttl") {
      if (!tools::ParseDecimal(*value, &n) || n < 1 || n > 3600) {
        return Usage("--lease-ttl takes 1 to 3600 seconds");
      }
      options.lease_ttl_seconds = static_cast<int64_t>(n);
    } else if (name == "--window-ms") {
      if (!tools::ParseDecimal(*value, &n) || n < 100 || n > 60000) {
        return Usage("--window-ms takes 100 to 60000");
      }
      options.window_millis = n;
    } else {
      return Usage("unknown option '" + arg.substr(0, 64) + "'");
    }
  }
  if (options.etcd.endpoints.empty()) return Usage("--etcd is required");

  // The signals are taken by sigtimedwait below, never by a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<std::unique_ptr<TsoServer>> server = TsoServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "strata-tso: %s\n", server.status().ToString().c_str());
    return server.status().code() == Status::Code::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  std::printf("strata-tso: listening at %s\n", (*server)->address().c_str());
  std::fflush(stdout);
  bool leader = false;
  std::string error;
  while (true) {
    const timespec tick{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) break;
    const TsoServer::Stats stats = (*server)->stats();
    if (stats.last_error != error) {
      error = stats.last_error;
      if (!error.empty()) std::printf("strata-tso: %s\n", error.c_str());
      std::fflush(stdout);
    }
    if (stats.leader != leader) {
      leader = stats.leader;
      if (leader) {
        std::printf("strata-tso: leader (term %llu), bound %llu ms\n",
                    static_cast<unsigned long long>(stats.terms),
                    static_cast<unsigned long long>(stats.bound_millis));
      } else {
        std::printf("strata-tso: no longer leader\n");
      }
      std::fflush(stdout);
    }
  }
  (*server)->Stop();
  std::printf("strata-tso: stopped\n");
  return tools::FinishOutput("strata-tso", kExitOk, kExitFailed);
}

}  // namespace
}  // namespace strata::cluster

int main(int argc, char** argv) { return strata::cluster::Run(argc, argv); }
