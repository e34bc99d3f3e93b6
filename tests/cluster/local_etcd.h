// LocalEtcd: a one-member etcd on 127.0.0.1 with temporary data, started and
// stopped through scripts/local-cluster.sh, for the tests of cluster/.
// Thread-compatible.
#ifndef STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_
#define STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "strata/status.h"

namespace strata::cluster {

class LocalEtcd {
 public:
  // Starts a fresh etcd; the error says why not (etcd not installed, say).
  static Result<std::unique_ptr<LocalEtcd>> Start();
  // Stops it and removes its data.
  ~LocalEtcd();
  LocalEtcd(const LocalEtcd&) = delete;
  LocalEtcd& operator=(const LocalEtcd&) = delete;

  // "http://127.0.0.1:PORT".
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }

  // Freezes the server (SIGSTOP): connections stay open, nothing answers.
  void Pause();
  // Lets it run again (SIGCONT).
  void Resume();

 private:
  LocalEtcd(std::string dir, std::string endpoint, pid_t pid)
      : dir_(std::move(dir)), endpoint_(std::move(endpoint)), pid_(pid) {}
  std::string dir_;
  std::string endpoint_;
  pid_t pid_;
};

}  // namespace strata::cluster

#endif  // STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_
