#include "cluster/local_etcd.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace strata::cluster {
namespace {

std::string Script() { return std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh"; }

// True when every thread of `pid` is stopped ('T' in /proc/PID/task/TID/stat;
// the state follows the command name's closing parenthesis).
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator tasks("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return true;  // gone: nothing left to answer
  for (const auto& task : tasks) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;  // thread just left
    if (stat[paren + 2] != 'T' && stat[paren + 2] != 't') return false;
  }
  return true;
}

}  // namespace

Result<std::map<std::string, std::string>> RunLocalClusterScript(const std::string& args) {
  FILE* out = ::popen((Script() + " " + args).c_str(), "r");
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
  if (rc != 0) {
    return Status::IOError(Script() + " " + args + " failed (exit " + std::to_string(rc) +
                           "); are etcd and Ceph installed? (scripts/install-deps.sh)");
  }
  return vars;
}

Result<std::map<std::string, std::string>> StartLocalCluster(const std::string& args) {
  STRATA_ASSIGN_OR_RETURN(auto vars, RunLocalClusterScript("start " + args));
  if (vars["STRATA_CLUSTER_DIR"].empty()) {
    return Status::IOError(Script() + " start " + args + " printed no STRATA_CLUSTER_DIR");
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

void FreezeProcess(pid_t pid) {
  ::kill(pid, SIGSTOP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!AllThreadsStopped(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ThawProcess(pid_t pid) { ::kill(pid, SIGCONT); }

void LocalEtcd::Pause() { FreezeProcess(pid_); }
void LocalEtcd::Resume() { ThawProcess(pid_); }

}  // namespace strata::cluster
