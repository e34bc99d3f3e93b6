// LocalCeph: a one-member etcd and a one-node Ceph cluster (one monitor, one
// memstore OSD, auth off, pool "strata" of size 1) on 127.0.0.1 with
// temporary data, started and stopped through
// `scripts/local-cluster.sh --with-ceph`, for the tests of the RADOS row
// store. Starting takes about 5 s, so a test binary shares one.
// Thread-compatible.
#ifndef STRATA_TESTS_CLUSTER_LOCAL_CEPH_H_
#define STRATA_TESTS_CLUSTER_LOCAL_CEPH_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "strata/rados.h"
#include "strata/status.h"

namespace strata::cluster {

class LocalCeph {
 public:
  // Starts etcd and Ceph; the error says why not (not installed, say). With
  // `bluestore` the OSD keeps its data in a file, so RestartOsd keeps it;
  // without `cls_lua` it loads Ceph's default object classes only.
  static Result<std::unique_ptr<LocalCeph>> Start(bool bluestore = false, bool cls_lua = true);
  // Stops them (by pid) and removes their data.
  ~LocalCeph();
  LocalCeph(const LocalCeph&) = delete;
  LocalCeph& operator=(const LocalCeph&) = delete;

  // Options that reach this cluster: etcd, ceph.conf and pool set, with
  // `timeout_millis` per call.
  RadosOptions Options(uint64_t timeout_millis = 10000) const;
  pid_t osd_pid() const { return osd_pid_; }
  pid_t mon_pid() const { return mon_pid_; }

  // Freezes a daemon (SIGSTOP): its connections stay open, nothing answers.
  void Pause(pid_t pid);
  // Lets it run again (SIGCONT).
  void Resume(pid_t pid);
  // SIGKILLs the OSD and starts it again; returns once it takes writes.
  Status RestartOsd();

 private:
  explicit LocalCeph(std::map<std::string, std::string> vars);
  std::map<std::string, std::string> vars_;
  pid_t mon_pid_ = 0;
  pid_t osd_pid_ = 0;
};

// The cluster every test of a binary that links shared_ceph.cc shares,
// started before its first test and stopped after its last (a gtest
// environment); each test makes tables of its own.
LocalCeph* SharedCeph();

}  // namespace strata::cluster

#endif  // STRATA_TESTS_CLUSTER_LOCAL_CEPH_H_
