#include "cluster/tso_client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "cluster/socket_util.h"
#include "cluster/tso_protocol.h"

namespace strata::cluster {
namespace {

constexpr auto kRetryPause = std::chrono::milliseconds(20);
constexpr auto kMinAttempt = std::chrono::milliseconds(200);

}  // namespace

// One call waiting in queue_, shared by its thread and the sender that
// serves it. The sender wakes exactly the calls a request served, and the
// call next in line to send, each through its own `state` (an atomic wait:
// no mutex to take on waking), never the whole queue.
struct TsoClient::Waiter {
  static constexpr int kWaiting = 0;
  static constexpr int kDone = 1;  // first and status are set
  static constexpr int kSend = 2;  // this call sends the next request
  std::atomic<int> state{kWaiting};
  uint32_t n = 0;
  Deadline deadline;
  uint64_t first = 0;
  Status status;
};

Result<std::unique_ptr<TsoClient>> TsoClient::Open(const TsoClientOptions& options) {
  if (options.root.empty()) return Status::InvalidArgument("tso client: root must not be empty");
  if (options.call_timeout_millis == 0) {
    return Status::InvalidArgument("tso client: call_timeout_millis must be positive");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd, EtcdClient::Open(options.etcd));
  return std::unique_ptr<TsoClient>(new TsoClient(options, std::move(etcd)));
}

TsoClient::TsoClient(TsoClientOptions options, std::unique_ptr<EtcdClient> etcd)
    : options_(std::move(options)), etcd_(std::move(etcd)) {}

TsoClient::~TsoClient() { Disconnect(); }

uint64_t TsoClient::requests() const {
  MutexLock l(&mu_);
  return requests_;
}

Result<uint64_t> TsoClient::GetTimestamp() {
  uint64_t ts = 0;
  STRATA_RETURN_IF_ERROR(GetTimestamps(1, &ts));
  return ts;
}

Status TsoClient::GetTimestamps(uint32_t n, uint64_t* first) {
  if (n == 0 || n > kMaxBatch) {
    return Status::InvalidArgument("GetTimestamps: n must be 1 to " + std::to_string(kMaxBatch));
  }
  auto me = std::make_shared<Waiter>();
  me->n = n;
  me->deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.call_timeout_millis);
  bool send = false;
  {
    MutexLock l(&mu_);
    queue_.push_back(me);
    if (!sending_) sending_ = send = true;
  }
  while (true) {
    if (send) {
      SendQueued();
      send = false;
    }
    // Acquire: pairs with the sender's release, after which first and
    // status are the sender's.
    const int state = me->state.load(std::memory_order_acquire);
    if (state == Waiter::kDone) break;
    if (state == Waiter::kSend) {
      me->state.store(Waiter::kWaiting, std::memory_order_relaxed);  // only this thread looks
      send = true;
      continue;
    }
    me->state.wait(Waiter::kWaiting, std::memory_order_acquire);
  }
  if (!me->status.ok()) return me->status;
  *first = me->first;
  return Status::OK();
}

void TsoClient::SendQueued() {
  // Every queued call that fits one request (the first always does), in
  // queue order.
  std::vector<std::shared_ptr<Waiter>> batch;
  uint64_t total = 0;
  {
    MutexLock l(&mu_);
    while (!queue_.empty() && total + queue_.front()->n <= kMaxBatch) {
      total += queue_.front()->n;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    ++requests_;
  }
  uint64_t base = 0;
  // The oldest call's deadline stands for the batch.
  Status s = Fetch(static_cast<uint32_t>(total), batch.front()->deadline, &base);
  for (const std::shared_ptr<Waiter>& w : batch) {
    w->status = s;
    w->first = base;
    base += w->n;
    w->state.store(Waiter::kDone, std::memory_order_release);
    w->state.notify_one();
  }
  // Hand sending to the call next in line, or stop.
  std::shared_ptr<Waiter> next;
  {
    MutexLock l(&mu_);
    if (queue_.empty()) {
      sending_ = false;
    } else {
      next = queue_.front();
      next->state.store(Waiter::kSend, std::memory_order_release);
    }
  }
  if (next != nullptr) next->state.notify_one();
}

void TsoClient::Disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status TsoClient::Fetch(uint32_t n, Deadline deadline, uint64_t* first) {
  Status last;
  while (true) {
    bool retry_same_leader = false;
    // A live leader answers at once (it hands out from memory), so one try
    // gets a slice of the deadline and a frozen leader leaves time for
    // another.
    const Deadline attempt = std::min(
        deadline,
        std::chrono::steady_clock::now() +
            std::max(kMinAttempt, std::chrono::milliseconds(options_.call_timeout_millis / 4)));
    Status s = FetchOnce(n, attempt, first, &retry_same_leader);
    if (s.ok()) return s;
    last = std::move(s);
    if (!retry_same_leader) {
      Disconnect();
      leader_.clear();
    }
    if (std::chrono::steady_clock::now() + kRetryPause >= deadline) break;
    std::this_thread::sleep_for(kRetryPause);
  }
  return Status::TimedOut("timestamp service: no leader answered within " +
                          std::to_string(options_.call_timeout_millis) +
                          " ms (last error: " + std::string(last.message()) + ")");
}

Status TsoClient::FetchOnce(uint32_t n, Deadline deadline, uint64_t* first,
                            bool* retry_same_leader) {
  if (fd_ < 0) {
    if (leader_.empty()) {
      Result<KeyValue> kv = etcd_->Get(tso::LeaderKey(options_.root));
      if (!kv.ok()) {
        return kv.status().code() == Status::Code::kNotFound
                   ? Status::NotFound("no timestamp service leader is registered at " +
                                      tso::LeaderKey(options_.root))
                   : kv.status();
      }
      leader_ = kv->value;
    }
    STRATA_ASSIGN_OR_RETURN(Endpoint e, Endpoint::Parse(leader_));
    STRATA_ASSIGN_OR_RETURN(fd_, ConnectTo(e, deadline));
  }
  char request[tso::kRequestSize];
  tso::EncodeFixed32(request, tso::kMagic);
  tso::EncodeFixed32(request + 4, n);
  STRATA_RETURN_IF_ERROR(WriteFull(fd_, request, sizeof(request), deadline));
  // The reply: code, then the timestamps or a message (tso_protocol.h).
  char reply[3 + tso::kMaxMessage];
  size_t have = 0;
  STRATA_RETURN_IF_ERROR(
      ReadAtLeast(fd_, reply, sizeof(reply), 1, &have, deadline, /*wait_first=*/true));
  const char code = reply[0];
  if (code == static_cast<char>(tso::ReplyCode::kOk)) {
    STRATA_RETURN_IF_ERROR(ReadAtLeast(fd_, reply, tso::kOkReplySize, tso::kOkReplySize, &have,
                                       deadline, /*wait_first=*/false));
    if (tso::DecodeFixed32(reply + 9) != n) {
      return Status::Corruption("timestamp service at " + leader_ + " answered a wrong count");
    }
    *first = tso::DecodeFixed64(reply + 1);
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(
      ReadAtLeast(fd_, reply, sizeof(reply), 3, &have, deadline, /*wait_first=*/false));
  const size_t size = static_cast<unsigned char>(reply[1]) |
                      (static_cast<size_t>(static_cast<unsigned char>(reply[2])) << 8);
  if (size > tso::kMaxMessage) {
    return Status::Corruption("timestamp service at " + leader_ + ": message too long");
  }
  STRATA_RETURN_IF_ERROR(
      ReadAtLeast(fd_, reply, sizeof(reply), 3 + size, &have, deadline, /*wait_first=*/false));
  *retry_same_leader = code == static_cast<char>(tso::ReplyCode::kUnavailable);
  return Status::IOError("timestamp service at " + leader_ + ": " + std::string(reply + 3, size));
}

}  // namespace strata::cluster
