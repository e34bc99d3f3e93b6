#include "cluster/local_etcd.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <map>

namespace strata::cluster {
namespace {

std::string Script() { return std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh"; }

}  // namespace

Result<std::map<std::string, std::string>> StartLocalCluster(const std::string& args) {
  FILE* out = ::popen((Script() + " start " + args).c_str(), "r");
  if (out == nullptr) return Status::IOError("cannot run " + Script());
  std::map<std::string, std::string> vars;
  char line[512];
  while (std::fgets(line, sizeof(line), out) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  const int rc = ::pclose(out);
  if (rc != 0 || vars["STRATA_CLUSTER_DIR"].empty()) {
    return Status::IOError(Script() + " start " + args + " failed (exit " + std::to_string(rc) +
                           "); are etcd and Ceph installed? (scripts/install-deps.sh)");
  }
  return vars;
}

void StopLocalCluster(const std::string& dir) {
  const std::string cmd = Script() + " stop --dir '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "'%s' failed\n", cmd.c_str());
}

Result<std::unique_ptr<LocalEtcd>> LocalEtcd::Start() {
  STRATA_ASSIGN_OR_RETURN(auto vars, StartLocalCluster(""));
  const pid_t pid = static_cast<pid_t>(std::atol(vars["ETCD_PID"].c_str()));
  if (vars["ETCD_ENDPOINTS"].empty() || pid <= 0) {
    StopLocalCluster(vars["STRATA_CLUSTER_DIR"]);
    return Status::IOError(Script() + " start printed no etcd endpoint or pid");
  }
  return std::unique_ptr<LocalEtcd>(
      new LocalEtcd(vars["STRATA_CLUSTER_DIR"], vars["ETCD_ENDPOINTS"], pid));
}

LocalEtcd::~LocalEtcd() { StopLocalCluster(dir_); }

void LocalEtcd::Pause() { ::kill(pid_, SIGSTOP); }
void LocalEtcd::Resume() { ::kill(pid_, SIGCONT); }

}  // namespace strata::cluster
