// RadosCluster, RadosReadOp, RadosWriteOp, RadosCall: a thin layer over
// librados' C API (rados/librados.h) for the RADOS row store: one
// connection to a pool, compound object operations built with owned
// buffers, sent asynchronously and awaited, and librados' error codes as
// Status.
//
// Why the C API: it is the stable ABI (librados' C++ classes change between
// Ceph releases), it needs only librados-dev, and it has every operation the
// store uses, omap_rm_range2 included, which the C++ API of Ceph 16 lacks.
// Its omap bounds are C strings: the keys (rados_keys.h) hold no NUL.
//
// RadosCluster is thread-safe; an operation and its call are
// thread-compatible.
#ifndef STRATA_CLUSTER_RADOS_IO_H_
#define STRATA_CLUSTER_RADOS_IO_H_

#include <rados/librados.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::cluster {

// The pool connection: a rados_t and an io context, opened within the
// options' timeout, each request bounded by it.
class RadosCluster {
 public:
  // `conf`: a ceph.conf path, or empty for librados' default search.
  static Result<std::shared_ptr<RadosCluster>> Connect(const std::string& conf,
                                                       const std::string& user,
                                                       const std::string& pool,
                                                       uint64_t timeout_millis);
  ~RadosCluster();
  RadosCluster(const RadosCluster&) = delete;
  RadosCluster& operator=(const RadosCluster&) = delete;

  rados_ioctx_t ioctx() const { return ioctx_; }
  const std::string& pool() const { return pool_; }

  // Object `oid`'s xattr `name` (a blocking call, bounded by the op
  // timeout); NotFound when the object does not exist.
  Result<std::string> GetXattr(const std::string& oid, const char* name) const;

  // Whether the OSDs may run conditions in the object class "lua"
  // (cls_lua): true until an operation finds the class missing or not
  // allowed, then false for the connection's life.
  bool server_conditions() const { return server_conditions_.load(std::memory_order_relaxed); }
  void DisableServerConditions() const {
    server_conditions_.store(false, std::memory_order_relaxed);
  }

 private:
  RadosCluster(rados_t cluster, rados_ioctx_t ioctx, std::string pool)
      : cluster_(cluster), ioctx_(ioctx), pool_(std::move(pool)) {}
  rados_t cluster_;
  rados_ioctx_t ioctx_;
  const std::string pool_;
  mutable std::atomic<bool> server_conditions_{true};
};

// librados' return code `rc` (negative errno) as a Status naming `what`:
// TimedOut for ETIMEDOUT, NotFound for ENOENT, IOError otherwise.
Status RadosError(int rc, std::string_view what);

// One page of an omap read: filled when the operation completes.
struct OmapPage {
  std::vector<std::pair<std::string, std::string>> entries;  // key order
  bool more = false;
  int rval = 0;
};

// A compound read of one object.
class RadosReadOp {
 public:
  RadosReadOp();
  ~RadosReadOp();
  RadosReadOp(const RadosReadOp&) = delete;
  RadosReadOp& operator=(const RadosReadOp&) = delete;

  // Fails the operation with -ECANCELED unless xattr `name` equals `value`.
  void CmpXattr(const char* name, std::string_view value);
  // Fails the operation with -ECANCELED unless the omap value of `key`
  // equals `value` (a missing key equals "").
  void OmapEquals(std::string_view key, std::string_view value);
  // Fails the operation (-ERANGE or -EOVERFLOW) unless the object's version
  // is `version`.
  void AssertVersion(uint64_t version);
  // Up to `max` entries after `start_after` whose keys start with `prefix`;
  // the page is filled in by Finish(). Returns its index.
  size_t GetVals(std::string_view start_after, std::string_view prefix, uint64_t max);
  // As GetVals without a prefix, keys only (the page's values are empty).
  size_t GetKeys(std::string_view start_after, uint64_t max);
  // The pages, after Finish().
  OmapPage& page(size_t i) { return pages_[i].page; }

  rados_read_op_t op() const { return op_; }
  // Copies what librados returned into the pages; call once the operation
  // completed.
  void Finish();

 private:
  struct Pending {
    OmapPage page;
    rados_omap_iter_t iter = nullptr;
    unsigned char more = 0;
    int rval = 0;
  };
  rados_read_op_t op_;
  // librados writes a page's results through pointers into it when the op
  // completes: a deque keeps them in place as pages are added.
  std::deque<Pending> pages_;
};

// A compound write of one object, applied atomically or not at all.
class RadosWriteOp {
 public:
  RadosWriteOp();
  ~RadosWriteOp();
  RadosWriteOp(const RadosWriteOp&) = delete;
  RadosWriteOp& operator=(const RadosWriteOp&) = delete;

  void AssertExists();
  void CreateExclusive();
  void SetXattr(const char* name, std::string_view value);
  void CmpXattr(const char* name, std::string_view value);
  // Fails the operation with -ECANCELED unless the omap value of `key`
  // compares to `value` as `op` says (LIBRADOS_CMPXATTR_OP_EQ / _GT /
  // _LT; a missing key compares as "").
  void OmapCmp(std::string_view key, std::string_view value, uint8_t op);
  void OmapSet(const std::map<std::string, std::string>& entries);
  void OmapSetOne(std::string_view key, std::string_view value);
  void OmapRemove(const std::vector<std::string>& keys);
  // Removes the keys in [begin, end).
  void OmapRemoveRange(std::string_view begin, std::string_view end);
  void Remove();
  // Runs method `method` of object class `cls` on the object with `input`,
  // within the op: a negative return fails the whole op with that code.
  void Exec(const char* cls, const char* method, std::string input);

  rados_write_op_t op() const { return op_; }

 private:
  rados_write_op_t op_;
  std::deque<std::string> inputs_;  // Exec's inputs, alive as long as the op
  int exec_rval_ = 0;
};

// One operation in flight. Wait() returns its result (0 or a negative
// errno) and the object's version after it.
class RadosCall {
 public:
  RadosCall() = default;
  ~RadosCall();
  RadosCall(const RadosCall&) = delete;
  RadosCall& operator=(const RadosCall&) = delete;

  // Sends `op` to object `oid`; a send that fails shows in Wait().
  void Start(const RadosCluster& cluster, const std::string& oid, RadosReadOp* op);
  void Start(const RadosCluster& cluster, const std::string& oid, RadosWriteOp* op);
  // REQUIRES: Start() was called. Waits for the result.
  int Wait();
  uint64_t version() const { return version_; }

 private:
  rados_completion_t completion_ = nullptr;
  RadosReadOp* read_ = nullptr;
  int start_rc_ = 0;
  int rc_ = 0;
  bool done_ = false;
  uint64_t version_ = 0;
};

// The RADOS operations this process has sent (RadosCall::Start), for the
// benchmarks' operations per transaction. Relaxed counters.
struct RadosOpCounts {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> writes{0};
};
RadosOpCounts& RadosOpsSent();

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_RADOS_IO_H_
