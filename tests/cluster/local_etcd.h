// LocalEtcd: a one-member etcd on 127.0.0.1 with temporary data, started and
// stopped through scripts/local-cluster.sh, for the tests of cluster/; and
// SharedEtcdTest, a fixture whose tests share one. Thread-compatible.
#ifndef STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_
#define STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "strata/status.h"

namespace strata::cluster {

// Runs `scripts/local-cluster.sh <args>` and returns the NAME=VALUE lines
// it printed; IOError when it fails.
Result<std::map<std::string, std::string>> RunLocalClusterScript(const std::string& args);
// Runs `scripts/local-cluster.sh start <args>` and returns the NAME=VALUE
// lines it printed (STRATA_CLUSTER_DIR among them); IOError when it fails.
Result<std::map<std::string, std::string>> StartLocalCluster(const std::string& args);
// `scripts/local-cluster.sh stop --dir <dir>`: stops what start began.
void StopLocalCluster(const std::string& dir);

// Sends SIGSTOP to `pid` and waits (up to 10 s) until every thread of it has
// stopped: the signal alone only asks, and a busy machine can let the
// process answer one more request before it obeys.
void FreezeProcess(pid_t pid);
// SIGCONT: the process runs again.
void ThawProcess(pid_t pid);

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

// A test suite whose tests share one LocalEtcd (each test keeps to keys of
// its own), started before the first test and stopped after the last.
class SharedEtcdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
    ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
    etcd_ = std::move(etcd).value().release();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  // The current test's name, for keys of its own.
  static std::string TestName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static inline LocalEtcd* etcd_ = nullptr;
};

}  // namespace strata::cluster

#endif  // STRATA_TESTS_CLUSTER_LOCAL_ETCD_H_
