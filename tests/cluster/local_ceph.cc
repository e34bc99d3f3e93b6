#include "cluster/local_ceph.h"

#include <cstdlib>

#include "cluster/local_etcd.h"

namespace strata::cluster {

Result<std::unique_ptr<LocalCeph>> LocalCeph::Start(bool bluestore, bool cls_lua) {
  std::string args = "--with-ceph";
  if (bluestore) args += " --bluestore";
  if (!cls_lua) args += " --no-cls-lua";
  STRATA_ASSIGN_OR_RETURN(auto vars, StartLocalCluster(args));
  std::unique_ptr<LocalCeph> ceph(new LocalCeph(std::move(vars)));
  if (ceph->mon_pid_ <= 0 || ceph->osd_pid_ <= 0 || ceph->vars_["CEPH_CONF"].empty()) {
    return Status::IOError("scripts/local-cluster.sh start --with-ceph printed no Ceph cluster");
  }
  return ceph;
}

LocalCeph::LocalCeph(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
  mon_pid_ = static_cast<pid_t>(std::atol(vars_["CEPH_MON_PID"].c_str()));
  osd_pid_ = static_cast<pid_t>(std::atol(vars_["CEPH_OSD_PID"].c_str()));
}

LocalCeph::~LocalCeph() { StopLocalCluster(vars_["STRATA_CLUSTER_DIR"]); }

RadosOptions LocalCeph::Options(uint64_t timeout_millis) const {
  RadosOptions o;
  o.etcd_endpoints = {vars_.at("ETCD_ENDPOINTS")};
  o.ceph_conf = vars_.at("CEPH_CONF");
  o.pool = vars_.at("CEPH_POOL");
  o.timeout_millis = timeout_millis;
  return o;
}

void LocalCeph::Pause(pid_t pid) { FreezeProcess(pid); }
void LocalCeph::Resume(pid_t pid) { ThawProcess(pid); }

Status LocalCeph::RestartOsd() {
  STRATA_ASSIGN_OR_RETURN(
      auto vars, RunLocalClusterScript("restart-osd --dir '" + vars_["STRATA_CLUSTER_DIR"] + "'"));
  const pid_t pid = static_cast<pid_t>(std::atol(vars["CEPH_OSD_PID"].c_str()));
  if (pid <= 0) return Status::IOError("restart-osd printed no CEPH_OSD_PID");
  osd_pid_ = pid;
  return Status::OK();
}

}  // namespace strata::cluster
