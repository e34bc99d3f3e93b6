// librados' C API behind RadosCluster and the operations (rados_io.h).
#include "cluster/rados_io.h"

#include <cerrno>
#include <cstring>

namespace strata::cluster {

Status RadosError(int rc, std::string_view what) {
  const std::string msg = std::string(what) + ": " + std::strerror(-rc);
  if (rc == -ETIMEDOUT) return Status::TimedOut(msg);
  if (rc == -ENOENT) return Status::NotFound(msg);
  return Status::IOError(msg);
}

Result<std::shared_ptr<RadosCluster>> RadosCluster::Connect(const std::string& conf,
                                                            const std::string& user,
                                                            const std::string& pool,
                                                            uint64_t timeout_millis) {
  rados_t cluster = nullptr;
  int rc = rados_create(&cluster, user.c_str());
  if (rc < 0) return RadosError(rc, "rados_create for user '" + user + "'");
  auto fail = [&](int code, const std::string& what) {
    rados_shutdown(cluster);
    return RadosError(code, what);
  };
  rc = rados_conf_read_file(cluster, conf.empty() ? nullptr : conf.c_str());
  if (rc < 0) return fail(rc, "reading the Ceph configuration '" + conf + "'");
  // Every request bounded by the call's timeout: a monitor or OSD that stops
  // answering fails the request with ETIMEDOUT instead of hanging.
  const std::string secs = std::to_string((timeout_millis + 999) / 1000);
  for (const char* option :
       {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    rc = rados_conf_set(cluster, option, secs.c_str());
    if (rc < 0) return fail(rc, std::string("setting ") + option);
  }
  rc = rados_connect(cluster);
  if (rc < 0) return fail(rc, "connecting to the Ceph cluster of '" + conf + "'");
  rados_ioctx_t ioctx = nullptr;
  rc = rados_ioctx_create(cluster, pool.c_str(), &ioctx);
  if (rc < 0) return fail(rc, "opening pool '" + pool + "'");
  return std::shared_ptr<RadosCluster>(new RadosCluster(cluster, ioctx, pool));
}

RadosCluster::~RadosCluster() {
  rados_ioctx_destroy(ioctx_);
  rados_shutdown(cluster_);
}

RadosReadOp::RadosReadOp() : op_(rados_create_read_op()) {}

RadosReadOp::~RadosReadOp() {
  for (Pending& p : pages_) {
    if (p.iter != nullptr) rados_omap_get_end(p.iter);
  }
  rados_release_read_op(op_);
}

void RadosReadOp::CmpXattr(const char* name, std::string_view value) {
  rados_read_op_cmpxattr(op_, name, LIBRADOS_CMPXATTR_OP_EQ, value.data(), value.size());
}

void RadosReadOp::OmapEquals(std::string_view key, std::string_view value) {
  rados_read_op_omap_cmp2(op_, key.data(), LIBRADOS_CMPXATTR_OP_EQ, value.data(), key.size(),
                          value.size(), nullptr);
}

void RadosReadOp::AssertVersion(uint64_t version) { rados_read_op_assert_version(op_, version); }

size_t RadosReadOp::GetVals(std::string_view start_after, std::string_view prefix, uint64_t max) {
  // The bounds are copied into the op at once (as C strings: keys hold no NUL).
  const std::string after(start_after), pre(prefix);
  Pending& p = pages_.emplace_back();
  rados_read_op_omap_get_vals2(op_, after.c_str(), pre.c_str(), max, &p.iter, &p.more, &p.rval);
  return pages_.size() - 1;
}

size_t RadosReadOp::GetKeys(std::string_view start_after, uint64_t max) {
  const std::string after(start_after);
  Pending& p = pages_.emplace_back();
  rados_read_op_omap_get_keys2(op_, after.c_str(), max, &p.iter, &p.more, &p.rval);
  return pages_.size() - 1;
}

void RadosReadOp::Finish() {
  for (Pending& p : pages_) {
    p.page.rval = p.rval;
    p.page.more = p.more != 0;
    p.page.entries.clear();
    if (p.iter == nullptr || p.rval < 0) continue;
    for (;;) {
      char* key = nullptr;
      char* val = nullptr;
      size_t key_len = 0, val_len = 0;
      if (rados_omap_get_next2(p.iter, &key, &val, &key_len, &val_len) < 0 || key == nullptr) {
        break;
      }
      p.page.entries.emplace_back(std::string(key, key_len),
                                  val == nullptr ? std::string() : std::string(val, val_len));
    }
    rados_omap_get_end(p.iter);
    p.iter = nullptr;
  }
}

RadosWriteOp::RadosWriteOp() : op_(rados_create_write_op()) {}
RadosWriteOp::~RadosWriteOp() { rados_release_write_op(op_); }

void RadosWriteOp::AssertExists() { rados_write_op_assert_exists(op_); }
void RadosWriteOp::CreateExclusive() {
  rados_write_op_create(op_, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
}
void RadosWriteOp::Remove() { rados_write_op_remove(op_); }
void RadosWriteOp::Exec(const char* cls, const char* method, std::string input) {
  const std::string& in = inputs_.emplace_back(std::move(input));
  rados_write_op_exec(op_, cls, method, in.data(), in.size(), &exec_rval_);
}

void RadosWriteOp::SetXattr(const char* name, std::string_view value) {
  rados_write_op_setxattr(op_, name, value.data(), value.size());
}

void RadosWriteOp::CmpXattr(const char* name, std::string_view value) {
  rados_write_op_cmpxattr(op_, name, LIBRADOS_CMPXATTR_OP_EQ, value.data(), value.size());
}

void RadosWriteOp::OmapCmp(std::string_view key, std::string_view value, uint8_t op) {
  rados_write_op_omap_cmp2(op_, key.data(), op, value.data(), key.size(), value.size(), nullptr);
}

void RadosWriteOp::OmapSet(const std::map<std::string, std::string>& entries) {
  if (entries.empty()) return;
  std::vector<const char*> keys, vals;
  std::vector<size_t> key_lens, val_lens;
  for (const auto& [k, v] : entries) {
    keys.push_back(k.data());
    vals.push_back(v.data());
    key_lens.push_back(k.size());
    val_lens.push_back(v.size());
  }
  rados_write_op_omap_set2(op_, keys.data(), vals.data(), key_lens.data(), val_lens.data(),
                           keys.size());
}

void RadosWriteOp::OmapSetOne(std::string_view key, std::string_view value) {
  const char* k = key.data();
  const char* v = value.data();
  const size_t kl = key.size(), vl = value.size();
  rados_write_op_omap_set2(op_, &k, &v, &kl, &vl, 1);
}

void RadosWriteOp::OmapRemove(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& k : keys) {
    ptrs.push_back(k.data());
    lens.push_back(k.size());
  }
  rados_write_op_omap_rm_keys2(op_, ptrs.data(), lens.data(), ptrs.size());
}

void RadosWriteOp::OmapRemoveRange(std::string_view begin, std::string_view end) {
  rados_write_op_omap_rm_range2(op_, begin.data(), begin.size(), end.data(), end.size());
}

RadosCall::~RadosCall() {
  if (completion_ == nullptr) return;
  // librados may still write into the operation's outputs until it completes.
  if (!done_ && start_rc_ >= 0) rados_aio_wait_for_complete(completion_);
  rados_aio_release(completion_);
}

Result<std::string> RadosCluster::GetXattr(const std::string& oid, const char* name) const {
  char buf[256];
  const int rc = rados_getxattr(ioctx_, oid.c_str(), name, buf, sizeof(buf));
  if (rc < 0) return RadosError(rc, "reading xattr " + std::string(name) + " of object " + oid);
  return std::string(buf, static_cast<size_t>(rc));
}

RadosOpCounts& RadosOpsSent() {
  static RadosOpCounts* counts = new RadosOpCounts();
  return *counts;
}

void RadosCall::Start(const RadosCluster& cluster, const std::string& oid, RadosReadOp* op) {
  RadosOpsSent().reads.fetch_add(1, std::memory_order_relaxed);
  read_ = op;
  rados_aio_create_completion2(nullptr, nullptr, &completion_);
  start_rc_ = rados_aio_read_op_operate(op->op(), cluster.ioctx(), completion_, oid.c_str(), 0);
}

void RadosCall::Start(const RadosCluster& cluster, const std::string& oid, RadosWriteOp* op) {
  RadosOpsSent().writes.fetch_add(1, std::memory_order_relaxed);
  rados_aio_create_completion2(nullptr, nullptr, &completion_);
  start_rc_ =
      rados_aio_write_op_operate(op->op(), cluster.ioctx(), completion_, oid.c_str(), nullptr, 0);
}

int RadosCall::Wait() {
  if (done_) return rc_;
  done_ = true;
  if (start_rc_ < 0) {
    // Never sent: nothing will complete.
    rados_aio_release(completion_);
    completion_ = nullptr;
    rc_ = start_rc_;
    return rc_;
  }
  rados_aio_wait_for_complete(completion_);
  rc_ = rados_aio_get_return_value(completion_);
  version_ = rados_aio_get_version(completion_);
  // librados fills the pages' iterators only when the operation succeeded.
  if (read_ != nullptr && rc_ >= 0) read_->Finish();
  return rc_;
}

}  // namespace strata::cluster
