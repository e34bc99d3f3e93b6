#include "cluster/tso_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "cluster/socket_util.h"
#include "cluster/tso_protocol.h"
#include "common/thread_util.h"
#include "txn/timestamp.h"

namespace strata::cluster {
namespace {

constexpr uint64_t kMinWindowMillis = 100;
constexpr uint64_t kMaxWindowMillis = 60000;
constexpr int64_t kMaxLeaseTtlSeconds = 3600;
// How long a connection waits for its next request before it looks whether
// the server is stopping.
constexpr int kIdlePollMillis = 200;

uint64_t WallMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// The part of a lease's TTL a leader does not count on: its renewal may have
// reached etcd late, and etcd's clock may run a little fast.
std::chrono::milliseconds LeaseMargin(int64_t ttl_seconds) {
  return std::chrono::milliseconds(std::max<int64_t>(ttl_seconds * 1000 / 5, 200));
}

bool ParseBound(const std::string& text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && !text.empty();
}

}  // namespace

Result<std::unique_ptr<TsoServer>> TsoServer::Start(const TsoServerOptions& options) {
  if (options.lease_ttl_seconds < 1 || options.lease_ttl_seconds > kMaxLeaseTtlSeconds) {
    return Status::InvalidArgument("tso: lease_ttl_seconds must be 1 to 3600");
  }
  if (options.window_millis < kMinWindowMillis || options.window_millis > kMaxWindowMillis) {
    return Status::InvalidArgument("tso: window_millis must be 100 to 60000");
  }
  if (options.root.empty()) return Status::InvalidArgument("tso: root must not be empty");
  STRATA_ASSIGN_OR_RETURN(Endpoint listen, Endpoint::Parse(options.listen, /*listening=*/true));
  if (!options.advertise.empty())
    STRATA_RETURN_IF_ERROR(Endpoint::Parse(options.advertise).status());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd, EtcdClient::Open(options.etcd));
  uint16_t port = 0;
  STRATA_ASSIGN_OR_RETURN(int fd, Listen(listen, &port));
  std::string address =
      options.advertise.empty() ? listen.host + ":" + std::to_string(port) : options.advertise;
  std::unique_ptr<TsoServer> server(
      new TsoServer(options, std::move(etcd), fd, std::move(address)));
  if (::pipe2(server->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::IOError("tso: pipe2 failed");
  }
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  server->campaign_thread_ = std::thread([s = server.get()] { s->CampaignLoop(); });
  return server;
}

TsoServer::TsoServer(TsoServerOptions options, std::unique_ptr<EtcdClient> etcd, int listen_fd,
                     std::string address)
    : options_(std::move(options)),
      etcd_(std::move(etcd)),
      listen_fd_(listen_fd),
      address_(std::move(address)) {}

TsoServer::~TsoServer() {
  Stop();
  ::close(listen_fd_);
  if (wake_fds_[0] >= 0) ::close(wake_fds_[0]);
  if (wake_fds_[1] >= 0) ::close(wake_fds_[1]);
}

void TsoServer::Stop() {
  stopping_.store(true);
  {
    MutexLock l(&mu_);
    cv_.SignalAll();
  }
  if (wake_fds_[1] >= 0) {
    const char byte = 0;
    (void)!::write(wake_fds_[1], &byte, 1);  // best effort: the pipe may be full already
  }
  if (campaign_thread_.joinable()) campaign_thread_.join();
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<Connection> connections;
  {
    MutexLock l(&mu_);
    connections.swap(connections_);
  }
  for (Connection& c : connections) c.thread.join();
}

TsoServer::Stats TsoServer::stats() const {
  MutexLock l(&mu_);
  Stats s = stats_;
  s.leader = leader_;
  s.bound_millis = bound_;
  return s;
}

void TsoServer::Pause(uint64_t millis) {
  MutexLock l(&mu_);
  if (!stopping_.load()) cv_.WaitFor(static_cast<int64_t>(millis) * 1000);
}

void TsoServer::AcceptLoop() {
  SetCurrentThreadName("strata-tso-acc");
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0 || stopping_.load()) break;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // best effort
    MutexLock l(&mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->done->load(std::memory_order_acquire)) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections_.push_back(Connection{std::thread([this, fd, done] {
                                        ServeConnection(fd);
                                        done->store(true, std::memory_order_release);
                                      }),
                                      done});
  }
}

void TsoServer::ServeConnection(int fd) {
  SetCurrentThreadName("strata-tso-conn");
  while (!stopping_.load()) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, kIdlePollMillis);
    if (ready == 0) continue;
    if (ready < 0) break;
    char request[tso::kRequestSize];
    const Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    if (!ReadFull(fd, request, sizeof(request), deadline).ok()) break;
    const uint32_t magic = tso::DecodeFixed32(request);
    const uint32_t count = tso::DecodeFixed32(request + 4);
    uint64_t first = 0;
    std::string why;
    uint8_t code;
    if (magic != tso::kMagic || count == 0 || count > (uint32_t{1} << txn::kLogicalBits)) {
      code = static_cast<uint8_t>(tso::ReplyCode::kBadRequest);
      why = "bad request: magic or count (1 to 262144) wrong";
    } else {
      code = Allocate(count, &first, &why);
    }
    std::string reply(1, static_cast<char>(code));
    if (code == static_cast<uint8_t>(tso::ReplyCode::kOk)) {
      reply.resize(tso::kOkReplySize);
      tso::EncodeFixed64(reply.data() + 1, first);
      tso::EncodeFixed32(reply.data() + 9, count);
    } else {
      why.resize(std::min(why.size(), tso::kMaxMessage));
      reply.push_back(static_cast<char>(why.size() & 0xff));
      reply.push_back(static_cast<char>(why.size() >> 8));
      reply += why;
    }
    if (!WriteFull(fd, reply.data(), reply.size(), deadline).ok()) break;
    if (code == static_cast<uint8_t>(tso::ReplyCode::kBadRequest)) break;
  }
  ::close(fd);
}

uint8_t TsoServer::Allocate(uint32_t n, uint64_t* first, std::string* why) {
  MutexLock l(&mu_);
  if (!leader_) {
    *why = "not the leader";
    return static_cast<uint8_t>(tso::ReplyCode::kNotLeader);
  }
  if (std::chrono::steady_clock::now() >= serve_until_) {
    *why = "the leader's lease is not confirmed";
    return static_cast<uint8_t>(tso::ReplyCode::kUnavailable);
  }
  const uint64_t now = WallMillis();
  if (physical_ < now) {
    physical_ = now;
    logical_ = 0;
  }
  if (logical_ + n > (uint64_t{1} << txn::kLogicalBits)) {
    ++physical_;
    logical_ = 0;
  }
  if (physical_ >= bound_) {
    *why = "the durable bound is reached";
    return static_cast<uint8_t>(tso::ReplyCode::kUnavailable);
  }
  *first = txn::ComposeTimestamp(physical_, logical_);
  logical_ += n;
  ++stats_.requests;
  stats_.timestamps += n;
  stats_.last_physical = physical_;
  return static_cast<uint8_t>(tso::ReplyCode::kOk);
}

void TsoServer::SetError(std::string error) {
  MutexLock l(&mu_);
  stats_.last_error = std::move(error);
}

void TsoServer::StepDown() {
  MutexLock l(&mu_);
  leader_ = false;
}

void TsoServer::CampaignLoop() {
  SetCurrentThreadName("strata-tso-camp");
  const std::string leader_key = tso::LeaderKey(options_.root);
  while (!stopping_.load()) {
    const Deadline sent = std::chrono::steady_clock::now();
    Result<std::pair<int64_t, int64_t>> lease = etcd_->GrantLease(options_.lease_ttl_seconds);
    if (!lease.ok()) {
      SetError("granting a lease: " + lease.status().ToString());
      Pause(200);
      continue;
    }
    const Deadline valid_until =
        sent + std::chrono::seconds(lease->second) - LeaseMargin(options_.lease_ttl_seconds);
    Result<TxnResult> won =
        etcd_->Txn({Compare::CreateRevision(leader_key, Compare::Op::kEqual, 0)},
                   {TxnOp::Put(leader_key, address_, lease->first)});
    if (won.ok() && won->succeeded) {
      if (!Lead(lease->first, valid_until, won->revision)) Pause(500);  // not again at once
    } else {
      (void)etcd_->RevokeLease(lease->first);  // best effort: it expires anyway
      if (won.ok()) {
        WaitForVacancy();
      } else {
        SetError("campaigning: " + won.status().ToString());
        Pause(200);
      }
    }
  }
}

void TsoServer::WaitForVacancy() {
  const std::string leader_key = tso::LeaderKey(options_.root);
  Result<KeyValue> current = etcd_->Get(leader_key);
  if (!current.ok()) {
    if (current.status().code() != Status::Code::kNotFound) Pause(200);
    return;
  }
  Result<std::unique_ptr<EtcdWatch>> watch =
      etcd_->Watch(leader_key, {}, current->mod_revision + 1);
  if (!watch.ok()) {
    Pause(200);
    return;
  }
  while (!stopping_.load()) {
    Result<std::vector<WatchEvent>> events = (*watch)->Next(kIdlePollMillis);
    if (!events.ok()) {
      if (events.status().code() == Status::Code::kTimedOut) continue;
      return;
    }
    for (const WatchEvent& e : *events) {
      if (e.type == WatchEvent::Type::kDelete) return;
    }
  }
}

bool TsoServer::Lead(int64_t lease, Deadline lease_valid_until, int64_t leader_revision) {
  const std::string leader_key = tso::LeaderKey(options_.root);
  const std::string bound_key = tso::BoundKey(options_.root);
  const Compare still_leader =
      Compare::CreateRevision(leader_key, Compare::Op::kEqual, leader_revision);
  const uint64_t window = options_.window_millis;

  // Start above everything any earlier leader may have handed out.
  bool served = false;
  uint64_t last_bound = 0;
  Result<KeyValue> stored = etcd_->Get(bound_key);
  bool ok = stored.ok() || stored.status().code() == Status::Code::kNotFound;
  if (!ok) SetError("reading " + bound_key + ": " + stored.status().ToString());
  if (stored.ok() && !ParseBound(stored->value, &last_bound)) {
    // Not a bound this service wrote: starting from a guess could repeat
    // timestamps, so this member does not serve.
    ok = false;
    SetError(bound_key + " holds no bound this service wrote; not serving");
  }
  if (ok) {
    const uint64_t start = std::max(WallMillis(), last_bound + 1);
    const uint64_t bound = start + window;
    Result<TxnResult> put =
        etcd_->Txn({still_leader}, {TxnOp::Put(bound_key, std::to_string(bound))});
    ok = put.ok() && put->succeeded;
    if (!put.ok()) SetError("writing " + bound_key + ": " + put.status().ToString());
    if (ok) {
      served = true;
      MutexLock l(&mu_);
      stats_.last_error.clear();
      leader_ = true;
      physical_ = start;
      logical_ = 0;
      bound_ = bound;
      serve_until_ = lease_valid_until;
      ++stats_.terms;
    }
  }

  const auto renew_every = std::chrono::milliseconds(options_.lease_ttl_seconds * 1000 / 3);
  Deadline next_renewal = std::chrono::steady_clock::now() + renew_every;
  while (ok && !stopping_.load()) {
    Pause(std::min<uint64_t>(static_cast<uint64_t>(renew_every.count()), window / 6));
    if (stopping_.load()) break;
    const Deadline now = std::chrono::steady_clock::now();
    if (now >= next_renewal) {
      Result<int64_t> ttl = etcd_->KeepAliveOnce(lease);
      if (ttl.ok()) {
        MutexLock l(&mu_);
        serve_until_ = now + std::chrono::seconds(*ttl) - LeaseMargin(options_.lease_ttl_seconds);
        next_renewal = now + renew_every;
      } else if (ttl.status().code() == Status::Code::kNotFound) {
        break;  // the lease is gone: so is the leadership
      } else {
        MutexLock l(&mu_);
        if (std::chrono::steady_clock::now() >= serve_until_) break;  // cannot confirm it in time
      }
    }
    uint64_t floor, bound;
    {
      MutexLock l(&mu_);
      floor = std::max(WallMillis(), physical_);
      bound = bound_;
    }
    if (bound < floor + window * 2 / 3) {
      const uint64_t next = floor + window;
      Result<TxnResult> put =
          etcd_->Txn({still_leader}, {TxnOp::Put(bound_key, std::to_string(next))});
      if (put.ok() && !put->succeeded) break;  // someone else leads
      if (put.ok()) {
        MutexLock l(&mu_);
        bound_ = next;
      }
      // An error leaves the bound as it was: timestamps stop at it until a
      // later round raises it.
    }
  }
  StepDown();
  (void)etcd_->RevokeLease(lease);  // best effort: resigning lets another member lead at once
  return served;
}

}  // namespace strata::cluster
