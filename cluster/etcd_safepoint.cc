#include "cluster/etcd_safepoint.h"

#include <algorithm>
#include <charconv>

#include "common/thread_util.h"

namespace strata::cluster {
namespace {

// Values are decimal timestamps.
bool ParseTs(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && p == end;
}

std::string InstanceName(uint64_t instance) {
  const std::string id = std::to_string(instance);
  return std::string(20 - std::min<size_t>(20, id.size()), '0') + id;
}

constexpr int kMaxRaiseRounds = 100;

}  // namespace

Result<std::unique_ptr<EtcdSafepoints>> EtcdSafepoints::Open(std::shared_ptr<EtcdClient> etcd,
                                                             std::string root, std::string name) {
  if (etcd == nullptr) return Status::InvalidArgument("safepoints: no etcd client");
  if (name.empty() || name.find('/') != std::string::npos) {
    return Status::InvalidArgument("safepoints: name must be non-empty, without '/'");
  }
  return std::unique_ptr<EtcdSafepoints>(
      new EtcdSafepoints(std::move(etcd), root + "/gc/" + name + "/"));
}

Status EtcdSafepoints::PublishMinStartTs(uint64_t instance, int64_t lease, uint64_t ts) {
  const std::string key = MinStartTsPrefix() + InstanceName(instance);
  if (ts == UINT64_MAX) return etcd_->Delete(key).status();
  return etcd_->Put(key, std::to_string(ts), lease).status();
}

Status EtcdSafepoints::HoldService(std::string_view id, uint64_t ts, int64_t ttl_seconds) {
  if (id.empty() || ts == 0 || ttl_seconds < 1) {
    return Status::InvalidArgument("service safepoint: needs an id, a timestamp and a TTL");
  }
  // Written only while the safepoint is as read here, at or below ts: a
  // safepoint raised meanwhile must not be undercut.
  Result<KeyValue> current = etcd_->Get(SafepointKey());
  if (!current.ok() && current.status().code() != Status::Code::kNotFound) {
    return current.status();
  }
  STRATA_ASSIGN_OR_RETURN(auto lease, etcd_->GrantLease(ttl_seconds));
  const std::string key = ServicePrefix() + std::string(id);
  std::vector<Compare> guard;
  if (current.ok()) {
    guard.push_back(
        Compare::ModRevision(SafepointKey(), Compare::Op::kEqual, current->mod_revision));
    uint64_t now = 0;
    if (ParseTs(current->value, &now) && ts < now) {
      (void)etcd_->RevokeLease(lease.first);  // best effort
      return Status::FailedPrecondition("service safepoint " + std::to_string(ts) +
                                        " is below the safepoint " + std::to_string(now));
    }
  } else {
    guard.push_back(Compare::CreateRevision(SafepointKey(), Compare::Op::kEqual, 0));
  }
  Result<TxnResult> put = etcd_->Txn(guard, {TxnOp::Put(key, std::to_string(ts), lease.first)});
  if (!put.ok() || !put->succeeded) {
    (void)etcd_->RevokeLease(lease.first);  // best effort
    if (!put.ok()) return put.status();
    return Status::Aborted("service safepoint: the safepoint moved meanwhile; try again");
  }
  int64_t old_lease = 0;
  {
    MutexLock l(&mu_);
    auto it = service_leases_.find(id);
    if (it != service_leases_.end()) {
      old_lease = it->second;
      it->second = lease.first;
    } else {
      service_leases_.emplace(std::string(id), lease.first);
    }
  }
  if (old_lease != 0) (void)etcd_->RevokeLease(old_lease);  // best effort: it expires anyway
  return Status::OK();
}

Status EtcdSafepoints::ReleaseService(std::string_view id) {
  const std::string key = ServicePrefix() + std::string(id);
  STRATA_ASSIGN_OR_RETURN(int64_t deleted, etcd_->Delete(key));
  int64_t lease = 0;
  {
    MutexLock l(&mu_);
    auto it = service_leases_.find(id);
    if (it != service_leases_.end()) {
      lease = it->second;
      service_leases_.erase(it);
    }
  }
  if (lease != 0) (void)etcd_->RevokeLease(lease);  // best effort
  if (deleted == 0) {
    return Status::NotFound("service safepoint '" + std::string(id.substr(0, 64)) +
                            "' is not held");
  }
  return Status::OK();
}

Result<uint64_t> EtcdSafepoints::LowestUnder(const std::string& prefix) {
  uint64_t lowest = UINT64_MAX;
  std::string from = prefix;
  const std::string end = EtcdClient::PrefixEnd(prefix);
  while (true) {
    STRATA_ASSIGN_OR_RETURN(RangeResult r, etcd_->Range(from, end, 1000));
    for (const KeyValue& kv : r.kvs) {
      uint64_t ts = 0;
      if (!ParseTs(kv.value, &ts)) {
        return Status::Corruption("safepoints: key " + kv.key.substr(0, 128) +
                                  " holds no timestamp");
      }
      lowest = std::min(lowest, ts);
    }
    if (!r.more || r.kvs.empty()) break;
    from = r.kvs.back().key + std::string(1, '\0');
  }
  return lowest;
}

Result<uint64_t> EtcdSafepoints::Floor() {
  STRATA_ASSIGN_OR_RETURN(uint64_t processes, LowestUnder(MinStartTsPrefix()));
  STRATA_ASSIGN_OR_RETURN(uint64_t services, LowestUnder(ServicePrefix()));
  return std::min(processes, services);
}

Result<uint64_t> EtcdSafepoints::Get() {
  Result<KeyValue> kv = etcd_->Get(SafepointKey());
  if (!kv.ok()) {
    if (kv.status().code() == Status::Code::kNotFound) return uint64_t{0};
    return kv.status();
  }
  uint64_t ts = 0;
  if (!ParseTs(kv->value, &ts)) {
    return Status::Corruption("safepoints: " + SafepointKey() + " holds no timestamp");
  }
  return ts;
}

Result<uint64_t> EtcdSafepoints::Raise(uint64_t safepoint) {
  for (int round = 0; round < kMaxRaiseRounds; ++round) {
    Result<KeyValue> kv = etcd_->Get(SafepointKey());
    Compare guard = Compare::CreateRevision(SafepointKey(), Compare::Op::kEqual, 0);
    if (kv.ok()) {
      uint64_t current = 0;
      if (!ParseTs(kv->value, &current)) {
        return Status::Corruption("safepoints: " + SafepointKey() + " holds no timestamp");
      }
      if (current >= safepoint) return current;
      guard = Compare::ModRevision(SafepointKey(), Compare::Op::kEqual, kv->mod_revision);
    } else if (kv.status().code() != Status::Code::kNotFound) {
      return kv.status();
    }
    STRATA_ASSIGN_OR_RETURN(
        TxnResult put,
        etcd_->Txn({guard}, {TxnOp::Put(SafepointKey(), std::to_string(safepoint))}));
    if (put.succeeded) return safepoint;
    // Another process raised it meanwhile: look again.
  }
  return Status::Busy("safepoints: " + SafepointKey() + " kept changing; try again");
}

Result<std::unique_ptr<EtcdSafepointStore>> EtcdSafepointStore::Open(
    std::shared_ptr<EtcdSafepoints> points) {
  STRATA_ASSIGN_OR_RETURN(uint64_t current, points->Get());
  return std::unique_ptr<EtcdSafepointStore>(new EtcdSafepointStore(std::move(points), current));
}

uint64_t EtcdSafepointStore::Get() const { return current_; }

Status EtcdSafepointStore::Raise(uint64_t safepoint) {
  STRATA_ASSIGN_OR_RETURN(uint64_t now, points_->Raise(safepoint));
  current_ = std::max(current_, now);
  return Status::OK();
}

EtcdSharedSafepoints::EtcdSharedSafepoints(std::shared_ptr<EtcdClient> etcd, std::string root,
                                           uint64_t instance, int64_t lease)
    : etcd_(std::move(etcd)), root_(std::move(root)), instance_(instance), lease_(lease) {
  publisher_ = std::thread([this] { PublishLoop(); });
}

EtcdSharedSafepoints::~EtcdSharedSafepoints() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  publisher_.join();
}

Result<std::shared_ptr<EtcdSafepoints>> EtcdSharedSafepoints::Points(std::string_view name) {
  MutexLock l(&mu_);
  auto it = points_.find(name);
  if (it != points_.end()) return it->second;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EtcdSafepoints> p,
                          EtcdSafepoints::Open(etcd_, root_, std::string(name)));
  std::shared_ptr<EtcdSafepoints> shared = std::move(p);
  points_.emplace(std::string(name), shared);
  return shared;
}

Result<uint64_t> EtcdSharedSafepoints::Get(std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<EtcdSafepoints> p, Points(name));
  return p->Get();
}

Result<uint64_t> EtcdSharedSafepoints::Raise(std::string_view name, uint64_t safepoint) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<EtcdSafepoints> p, Points(name));
  return p->Raise(safepoint);
}

Result<uint64_t> EtcdSharedSafepoints::Floor(std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<EtcdSafepoints> p, Points(name));
  return p->Floor();
}

void EtcdSharedSafepoints::Track(std::string_view name,
                                 std::function<std::optional<uint64_t>()> oldest) {
  MutexLock l(&mu_);
  trackers_.push_back(Tracker{std::string(name), std::move(oldest)});
  cv_.SignalAll();  // publish the new tracker's value soon
}

Status EtcdSharedSafepoints::PublishNow() {
  MutexLock publishing(&publish_mu_);
  // The trackers are called without mu_: they take their TxnDB's locks.
  std::vector<Tracker> trackers;
  {
    MutexLock l(&mu_);
    trackers = trackers_;
  }
  std::map<std::string, uint64_t, std::less<>> lowest;
  std::vector<size_t> gone;
  for (size_t i = 0; i < trackers.size(); ++i) {
    std::optional<uint64_t> v = trackers[i].oldest();
    if (!v) {
      gone.push_back(i);
      lowest.emplace(trackers[i].name, UINT64_MAX);  // may be its name's last tracker
      continue;
    }
    auto [it, inserted] = lowest.emplace(trackers[i].name, *v);
    if (!inserted) it->second = std::min(it->second, *v);
  }
  {
    MutexLock l(&mu_);
    // Trackers only ever get appended, so indexes below trackers.size() are
    // the ones called above.
    for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
      trackers_.erase(trackers_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
  }
  Status first_error;
  for (const auto& [name, value] : lowest) {
    {
      MutexLock l(&mu_);
      auto p = published_.find(name);
      if (p != published_.end() && p->second == value) continue;
    }
    Result<std::shared_ptr<EtcdSafepoints>> points = Points(name);
    Status s =
        points.ok() ? (*points)->PublishMinStartTs(instance_, lease_, value) : points.status();
    if (s.ok()) {
      MutexLock l(&mu_);
      published_[name] = value;
    } else if (first_error.ok()) {
      first_error = s;
    }
  }
  return first_error;
}

void EtcdSharedSafepoints::PublishLoop() {
  SetCurrentThreadName("strata-gc-pub");
  MutexLock l(&mu_);
  while (!stopping_) {
    mu_.Unlock();
    (void)PublishNow();  // a failure is retried next round; the lease bounds a stale value
    mu_.Lock();
    if (stopping_) break;
    cv_.WaitFor(static_cast<int64_t>(kPublishMillis) * 1000);
  }
}

}  // namespace strata::cluster
