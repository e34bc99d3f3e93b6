// One client process of the RADOS bank test (rados_bank_test.cc): opens
// cluster services and a TransactionDB over the bank's RADOS tables, and
// makes transfers from several threads until it is killed. Each transfer
// also writes a receipt, row "<client>-<incarnation>-<thread>-<n>" of table
// "receipts"; once its commit returns OK the row's name is appended to the
// acknowledgement file (one write(2) per line, so a SIGKILL loses no line
// already written). Errors (a conflict, a lock, an OSD restarting) are
// end the transfer: nothing is acknowledged that did not commit. A balance
// that is negative or does not parse ends the process with exit code 3.
//
//   rados_bank_client --etcd URL --ceph-conf PATH --pool P --root R
//                     --dir DIR --name NAME --threads N --acks FILE
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "strata/cluster.h"
#include "strata/rados.h"
#include "strata/transaction.h"
#include "txn/bank_workload.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: rados_bank_client --etcd URL --ceph-conf PATH --pool P --root R "
               "--dir DIR --name NAME --threads N --acks FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0) {
      Usage();
      return 0;
    }
    if (std::strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) return Usage();
    args[argv[i] + 2] = argv[i + 1];
    i++;
  }
  for (const char* need : {"etcd", "ceph-conf", "pool", "root", "dir", "name", "threads", "acks"}) {
    if (args[need].empty()) return Usage();
  }
  strata::ClusterServicesOptions co;
  co.etcd_endpoints = {args["etcd"]};
  co.lease_ttl_seconds = 2;
  auto services = strata::OpenClusterServices(args["dir"], co);
  if (!services.ok()) {
    std::fprintf(stderr, "OpenClusterServices: %s\n", services.status().ToString().c_str());
    return 1;
  }
  strata::RadosOptions ro;
  ro.etcd_endpoints = {args["etcd"]};
  ro.ceph_conf = args["ceph-conf"];
  ro.pool = args["pool"];
  ro.root = args["root"];
  ro.timeout_millis = 5000;
  strata::TransactionDBOptions o;
  o.lock_ttl_millis = 1000;
  auto db = strata::OpenRadosTransactionDB(*services, ro, o);
  if (!db.ok()) {
    std::fprintf(stderr, "OpenRadosTransactionDB: %s\n", db.status().ToString().c_str());
    return 1;
  }
  const int acks = ::open(args["acks"].c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (acks < 0) {
    std::perror("open acks");
    return 1;
  }
  const strata::test::Bank bank;
  const int threads = std::atoi(args["threads"].c_str());
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      strata::Random rnd(static_cast<uint64_t>(::getpid()) * 1000 + t);
      std::vector<strata::test::Leg> legs;
      for (uint64_t n = 0;; n++) {
        const std::string receipt = args["name"] + "-" + std::to_string(t) + "-" + std::to_string(n);
        auto txn = (*db)->Begin();
        if (!txn.ok()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        strata::Status s = strata::test::PrepareTransfer(txn->get(), bank, &rnd, &legs);
        if (s.ok()) s = (*txn)->Set("receipts", receipt, "r", "1");
        if (s.ok()) s = (*txn)->Commit();
        if (s.ok()) {
          const std::string line = receipt + "\n";
          if (::write(acks, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            std::perror("write acks");
            std::_Exit(1);
          }
        } else if (s.IsCorruption()) {  // a negative balance, a balance that does not parse
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
          std::_Exit(3);
        } else if (s.code() != strata::Status::Code::kAborted &&
                   s.code() != strata::Status::Code::kBusy) {
          // The cluster is unreachable for now (an OSD restarting): wait.
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();  // never: the test kills the process
  return 0;
}
