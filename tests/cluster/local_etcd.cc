#include "cluster/local_etcd.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>

namespace strata::cluster {
namespace {

std::string Script() { return std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh"; }

}  // namespace

Result<std::unique_ptr<LocalEtcd>> LocalEtcd::Start() {
  FILE* out = ::popen((Script() + " start").c_str(), "r");
  if (out == nullptr) return Status::IOError("cannot run " + Script());
  std::string dir, endpoint;
  pid_t pid = 0;
  char line[512];
  while (std::fgets(line, sizeof(line), out) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t eq = s.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = s.substr(0, eq), value = s.substr(eq + 1);
    if (name == "STRATA_CLUSTER_DIR") dir = value;
    if (name == "ETCD_ENDPOINTS") endpoint = value;
    if (name == "ETCD_PID") pid = static_cast<pid_t>(std::atol(value.c_str()));
  }
  const int rc = ::pclose(out);
  if (rc != 0 || dir.empty() || endpoint.empty() || pid <= 0) {
    return Status::IOError(Script() + " start failed (exit " + std::to_string(rc) +
                           "); is etcd installed? (scripts/install-deps.sh)");
  }
  return std::unique_ptr<LocalEtcd>(new LocalEtcd(dir, endpoint, pid));
}

LocalEtcd::~LocalEtcd() {
  const std::string cmd = Script() + " stop --dir '" + dir_ + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "LocalEtcd: '%s' failed\n", cmd.c_str());
}

void LocalEtcd::Pause() { ::kill(pid_, SIGSTOP); }
void LocalEtcd::Resume() { ::kill(pid_, SIGCONT); }

}  // namespace strata::cluster
