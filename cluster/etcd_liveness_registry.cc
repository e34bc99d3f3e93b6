#include "cluster/etcd_liveness_registry.h"

#include <algorithm>

#include "common/thread_util.h"

namespace strata::cluster {
namespace {

constexpr int64_t kMinTtlSeconds = 2;
constexpr int64_t kMaxTtlSeconds = 3600;

// The part of the lease's TTL the instance does not count on (its renewal
// may have reached etcd late, etcd's clock may run a little fast).
std::chrono::milliseconds Margin(int64_t ttl_seconds) {
  return std::chrono::milliseconds(std::max<int64_t>(ttl_seconds * 1000 / 5, 200));
}

Status Dead(const txn::Owner& owner, std::string_view why) {
  return Status::Aborted("owner " + owner.ToString() + " is dead: " + std::string(why));
}

}  // namespace

std::string EtcdLivenessRegistry::InstanceKey(const std::string& root, uint64_t instance_id) {
  // Zero-padded, so the keys of a prefix range come in instance order.
  std::string id = std::to_string(instance_id);
  return root + "/live/" + std::string(20 - std::min<size_t>(20, id.size()), '0') + id;
}

Result<std::unique_ptr<EtcdLivenessRegistry>> EtcdLivenessRegistry::Open(
    const EtcdLivenessOptions& options) {
  if (options.lease_ttl_seconds < kMinTtlSeconds || options.lease_ttl_seconds > kMaxTtlSeconds) {
    return Status::InvalidArgument("liveness: lease_ttl_seconds must be 2 to 3600");
  }
  if (options.root.empty()) return Status::InvalidArgument("liveness: root must not be empty");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd, EtcdClient::Open(options.etcd));
  const Deadline sent = std::chrono::steady_clock::now();
  STRATA_ASSIGN_OR_RETURN(auto lease, etcd->GrantLease(options.lease_ttl_seconds));
  // The instance key's name holds its own create revision, which is known
  // only once it exists: so it is created under a per-lease name first, and
  // its create revision becomes the id.
  const std::string claim = options.root + "/live-claim/" + std::to_string(lease.first);
  Result<int64_t> revision = etcd->Put(claim, options.description, lease.first);
  if (!revision.ok()) {
    (void)etcd->RevokeLease(lease.first);  // best effort: it expires anyway
    return revision.status();
  }
  const uint64_t instance_id = static_cast<uint64_t>(*revision);
  Result<TxnResult> put = etcd->Txn(
      {}, {TxnOp::Put(InstanceKey(options.root, instance_id), options.description, lease.first),
           TxnOp::Delete(claim)});
  if (!put.ok()) {
    (void)etcd->RevokeLease(lease.first);  // best effort
    return put.status();
  }
  const Deadline valid_until =
      sent + std::chrono::seconds(lease.second) - Margin(options.lease_ttl_seconds);
  std::unique_ptr<EtcdLivenessRegistry> registry(
      new EtcdLivenessRegistry(options, std::move(etcd), lease.first, instance_id, valid_until));
  registry->renewer_ = std::thread([r = registry.get()] { r->RenewLoop(); });
  return registry;
}

EtcdLivenessRegistry::EtcdLivenessRegistry(EtcdLivenessOptions options,
                                           std::unique_ptr<EtcdClient> etcd, int64_t lease,
                                           uint64_t instance_id, Deadline valid_until)
    : options_(std::move(options)),
      etcd_(std::move(etcd)),
      lease_(lease),
      instance_id_(instance_id),
      valid_until_(valid_until) {}

EtcdLivenessRegistry::~EtcdLivenessRegistry() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (renewer_.joinable()) renewer_.join();
  (void)etcd_->RevokeLease(lease_);  // best effort: unrevoked, it expires after its TTL
}

void EtcdLivenessRegistry::RenewLoop() {
  SetCurrentThreadName("strata-live-hb");
  const auto every = std::chrono::milliseconds(options_.lease_ttl_seconds * 1000 / 3);
  MutexLock l(&mu_);
  while (!stopping_ && !lease_lost_) {
    cv_.WaitFor(std::chrono::duration_cast<std::chrono::microseconds>(every).count());
    if (stopping_) break;
    mu_.Unlock();
    const Deadline sent = std::chrono::steady_clock::now();
    Result<int64_t> ttl = etcd_->KeepAliveOnce(lease_);
    mu_.Lock();
    if (ttl.ok()) {
      valid_until_ = std::max(
          valid_until_, sent + std::chrono::seconds(*ttl) - Margin(options_.lease_ttl_seconds));
    } else if (ttl.status().code() == Status::Code::kNotFound) {
      lease_lost_ = true;  // etcd expired it: every owner of this instance is dead
    }
    // Any other error: try again next round; valid_until_ runs out meanwhile.
  }
}

bool EtcdLivenessRegistry::lease_alive() const {
  MutexLock l(&mu_);
  return !lease_lost_ && std::chrono::steady_clock::now() < valid_until_;
}

bool EtcdLivenessRegistry::TokenAlive(uint64_t token) {
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return false;
  const Deadline now = std::chrono::steady_clock::now();
  if (lease_lost_ || now >= valid_until_ ||
      now - it->second > std::chrono::seconds(options_.lease_ttl_seconds)) {
    tokens_.erase(it);
    return false;
  }
  return true;
}

Result<txn::Owner> EtcdLivenessRegistry::Register() {
  MutexLock l(&mu_);
  if (lease_lost_ || std::chrono::steady_clock::now() >= valid_until_) {
    return Status::Aborted("liveness: this process's etcd lease is not confirmed (etcd " +
                           std::string(lease_lost_ ? "expired it" : "did not answer in time") +
                           "); no new owner can be registered");
  }
  const uint64_t token = next_token_++;
  tokens_[token] = std::chrono::steady_clock::now();
  return txn::Owner{instance_id_, token};
}

Status EtcdLivenessRegistry::Heartbeat(const txn::Owner& owner) {
  MutexLock l(&mu_);
  if (owner.instance_id != instance_id_) return Dead(owner, "of another instance");
  if (!TokenAlive(owner.token)) {
    return Dead(owner, lease_lost_ ? "the instance's etcd lease expired"
                                   : "timed out, unregistered, or the etcd lease is not confirmed");
  }
  tokens_[owner.token] = std::chrono::steady_clock::now();
  return Status::OK();
}

Status EtcdLivenessRegistry::Unregister(const txn::Owner& owner) {
  MutexLock l(&mu_);
  if (owner.instance_id != instance_id_ || !TokenAlive(owner.token)) {
    return Status::NotFound("owner " + owner.ToString() + " is not alive");
  }
  tokens_.erase(owner.token);
  return Status::OK();
}

Result<bool> EtcdLivenessRegistry::IsAlive(const txn::Owner& owner) {
  {
    MutexLock l(&mu_);
    if (owner.instance_id == instance_id_) return TokenAlive(owner.token);
    if (owner.instance_id == 0 || owner.token == 0) return false;
    if (dead_instances_.count(owner.instance_id) != 0) return false;
  }
  Result<KeyValue> key = etcd_->Get(InstanceKey(options_.root, owner.instance_id));
  if (key.ok()) return true;
  if (key.status().code() != Status::Code::kNotFound) return key.status();
  MutexLock l(&mu_);
  dead_instances_.insert(owner.instance_id);
  return false;
}

}  // namespace strata::cluster
