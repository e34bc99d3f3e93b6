// Group commit and framing for the write-ahead log; the format is wal/FORMAT.md.
#include "wal/log_writer.h"

#include <sched.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

#include "wal/internal/group_framer.h"
#include "wal/internal/group_picker.h"
#include "wal/internal/segment_io.h"
#include "wal/internal/segment_manager.h"
#include "wal/log_format.h"

namespace strata::wal {

namespace {

// What a record may add to its payload in the group's image: its prefix and
// one fragment header. Further fragment headers and padding are per block.
constexpr size_t kRecordOverhead = kMaxRecordPrefixSize + kFragmentHeaderSize;
// The framing buffer (registered with io_uring) holds groups up to this size;
// larger ones are framed in a heap buffer and written with a plain write op.
// Registered memory counts against RLIMIT_MEMLOCK, so it stays modest.
constexpr size_t kMaxFramingBuffer = 2 << 20;
// A heap framing buffer larger than this is freed after its group.
constexpr size_t kKeepOverflowBytes = 16 << 20;
// A new leader waits for the writers it expects (wal/README.md, "Gathering")
// at most this fraction of the recent write + fdatasync time: the wait is only
// worth it while it is short next to the sync it saves.
constexpr uint64_t kGatherNumerator = 1;
constexpr uint64_t kGatherDenominator = 2;
// The recent sync time is a moving average; each group's weighs this much.
constexpr uint64_t kSyncAverageWeight = 8;
// An unsynced member, and a leader waiting for its turn to apply, spin this
// long before they sleep. Their wait is a group's write and apply, a few
// microseconds when its leader is running; sleeping and being woken costs
// more than that on both sides. Longer waits mean the leader is not running
// (more writers than CPUs), and spinning on would only take CPU from it.
constexpr int64_t kSpinNanos = 5'000;
// Past kSpinNanos, a few waiters (kMaxLongSpinners) spin on up to this much
// longer. A wait that outlasts the short spin is often a group whose write is
// slow but whose leader runs (a neighbour's large record, a slow page-cache
// copy on a busy machine), and on a virtual machine a sleep and wake-up cost
// some tens of microseconds, on the waiter's path alone: a tenant's small
// write behind a neighbour's flood of writes waited so (bench/tenant_bench).
// One spinner less than there are CPUs leaves a CPU to the leader and to
// everyone else, so that with many waiters (bench/txn_bench) the rest still
// sleep after the short spin, as before. A long spinner that finds it was
// descheduled (kPreemptedNanos between two looks at the clock) stops: the
// CPUs have more to run than there are of them, and its spinning would only
// hold others up.
constexpr int64_t kLongSpinNanos = 30'000;
constexpr int64_t kPreemptedNanos = 5'000;

// The CPUs this process may run on: its affinity mask, which a container or
// taskset may make smaller than the machine.
int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

const int kMaxLongSpinners = UsableCpus() - 1;
std::atomic<int> long_spinners{0};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins from `from` (the clock read when it starts) until done(), until
// `deadline` (wall time, whatever LogOptions::clock says: a frozen test clock
// must not make it spin forever) or, when `stop_if_preempted`, until the
// thread finds it was descheduled; returns done().
template <typename Done>
bool SpinUntilDeadline(Done done, std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point deadline, bool stop_if_preempted) {
  auto last = from;
  for (int i = 1;; i++) {
    CpuRelax();
    if (done()) return true;
    if (i % 32 != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline ||
        (stop_if_preempted && now - last > std::chrono::nanoseconds(kPreemptedNanos))) {
      return done();
    }
    last = now;
  }
}

// Spins until done() for kSpinNanos, then, while fewer than kMaxLongSpinners
// others are at it, up to kLongSpinNanos more unless descheduled meanwhile;
// returns done().
template <typename Done>
bool SpinUntil(Done done) {
  if (done()) return true;  // the common case, without reading the clock
  const auto start = std::chrono::steady_clock::now();
  if (SpinUntilDeadline(done, start, start + std::chrono::nanoseconds(kSpinNanos), false)) {
    return true;
  }
  if (long_spinners.fetch_add(1, std::memory_order_relaxed) >= kMaxLongSpinners) {
    long_spinners.fetch_sub(1, std::memory_order_relaxed);
    return done();
  }
  const bool done_now =
      SpinUntilDeadline(done, std::chrono::steady_clock::now(),
                        start + std::chrono::nanoseconds(kSpinNanos + kLongSpinNanos), true);
  long_spinners.fetch_sub(1, std::memory_order_relaxed);
  return done_now;
}

}  // namespace

// A writer's request on its way through the log, on the writer's stack.
//
// `state` tells the writer what happened: kWaiting, then kLead (a synced
// writer was handed the lead), kOffered (an unsynced writer may take the lead
// if it is still free when it gets there) or kDone (its group is done and
// `status` holds the outcome). A writer that goes to sleep first moves
// kWaiting -> kSleeping under `mu`; Notify then sets the state under `mu` and
// signals. Otherwise Notify sets it with one compare-and-swap and never
// touches the waiter again, since the writer may return (and its Waiter go)
// the moment it sees kDone. Notifications of one waiter never race: offers
// and hand-overs are made under the writer's mu_ to a queued waiter, kDone
// only by the leader of the group that took it (under mu_) out of the queue.
struct LogWriter::Waiter {
  enum State : uint8_t { kWaiting, kSleeping, kLead, kOffered, kDone };

  Waiter(WriteRequest* r, bool wants_sync) : request(r), sync(wants_sync), cv(&mu) {}
  WriteRequest* const request;  // nullptr for a Sync() barrier
  const bool sync;
  // Acquire loads and release stores or acq_rel exchanges: kDone publishes
  // `status` and the apply of the request.
  std::atomic<uint8_t> state{kWaiting};
  // In queue_ (not yet taken into a group). Guarded by the writer's mu_.
  bool queued = false;
  Status status;  // written once, before state becomes kDone
  Mutex mu;
  CondVar cv;
};

void LogWriter::Notify(Waiter* w, uint8_t state) {
  uint8_t cur = w->state.load(std::memory_order_acquire);
  while (cur != Waiter::kSleeping) {
    if (w->state.compare_exchange_weak(cur, state, std::memory_order_acq_rel)) return;
  }
  MutexLock l(&w->mu);
  w->state.store(state, std::memory_order_release);
  w->cv.Signal();  // under w->mu, so w outlives the call
}

uint8_t LogWriter::Await(Waiter* w) {
  uint8_t s = Waiter::kWaiting;
  if (!w->sync && SpinUntil([&] {
        return (s = w->state.load(std::memory_order_acquire)) != Waiter::kWaiting;
      })) {
    return s;
  }
  MutexLock l(&w->mu);
  s = Waiter::kWaiting;
  if (!w->state.compare_exchange_strong(s, Waiter::kSleeping, std::memory_order_acq_rel)) return s;
  while ((s = w->state.load(std::memory_order_acquire)) == Waiter::kSleeping) w->cv.Wait();
  return s;
}

LogWriter::LogWriter(const LogOptions& options, std::string dir, SequenceNumber next_sequence,
                     ApplyFunction apply)
    : options_(options),
      dir_(std::move(dir)),
      apply_(std::move(apply)),
      clock_(options.clock),
      segments_(std::make_unique<SegmentManager>(
          SegmentManager::Options{options.fs, options.segment_size, options.recycle_segments,
                                  kMaxSpareSegments, options.segment_started},
          dir_)),
      durable_cv_(&mu_),
      gather_cv_(&mu_),
      idle_cv_(&mu_),
      next_sequence_(next_sequence),
      apply_cv_(&mu_),
      framer_(std::make_unique<GroupFramer>(options.segment_size)) {}

LogWriter::~LogWriter() { Close().PermitUncheckedError(); }  // callers that care call Close()

Status LogWriter::Open(const LogOptions& options, const std::string& dir,
                       SequenceNumber next_sequence, ApplyFunction apply,
                       std::unique_ptr<LogWriter>* result) {
  if (options.fs == nullptr) return Status::InvalidArgument("LogOptions::fs is null");
  if (options.clock == nullptr) return Status::InvalidArgument("LogOptions::clock is null");
  if (options.segment_size < kBlockSize || options.segment_size % kBlockSize != 0) {
    return Status::InvalidArgument("log segment_size " + std::to_string(options.segment_size) +
                                   " is not a positive multiple of " + std::to_string(kBlockSize));
  }
  if (options.max_group_bytes == 0) {
    return Status::InvalidArgument("log max_group_bytes must be positive");
  }
  std::unique_ptr<LogWriter> w(new LogWriter(options, dir, next_sequence, std::move(apply)));
  uint64_t first_segment = 0;
  STRATA_RETURN_IF_ERROR(w->segments_->Load(next_sequence, &first_segment));
  STRATA_RETURN_IF_ERROR(w->StartSegment(first_segment, next_sequence, /*announce=*/false));
  w->first_segment_ = first_segment;

  const size_t capacity = std::min(
      kMaxFramingBuffer, options.max_group_bytes + options.max_group_bytes / 256 + 4 * kBlockSize);
  if (options.use_io_uring && w->segments_->file()->fd() >= 0) {
    std::string why;
    w->io_ = NewUringSegmentIo(capacity, &why);
  }
  if (w->io_ == nullptr) w->io_ = NewFileSegmentIo(capacity);
  w->using_io_uring_ = w->io_->uses_io_uring();
  *result = std::move(w);
  return Status::OK();
}

Status LogWriter::Write(WriteRequest* request) {
  if (request->sequence_count == 0) {
    return Status::InvalidArgument("a log record must use at least one sequence number");
  }
  Waiter w(request, request->sync);
  return Submit(&w, /*allow_closed=*/false);
}

Status LogWriter::Sync() {
  Waiter w(nullptr, /*wants_sync=*/true);
  return Submit(&w, /*allow_closed=*/false);
}

void LogWriter::UndurableSequences(SequenceNumber* first, SequenceNumber* last) const {
  // Last first: the acquire load makes the group's first visible with it (a
  // later group's first is above it, which reads as none: this group is
  // durable by then, since one fdatasync after an apply runs at a time).
  const SequenceNumber l = undurable_last_.load(std::memory_order_acquire);
  *first = l == 0 ? 1 : undurable_first_.load(std::memory_order_acquire);
  *last = l;
}

Status LogWriter::AwaitDurable(SequenceNumber last) {
  MutexLock l(&mu_);
  while (syncing_ && undurable_last_.load(std::memory_order_relaxed) == last) durable_cv_.Wait();
  // Still named after its fdatasync ended: that fdatasync failed (and set
  // error_). The range goes only when the fdatasync succeeds.
  if (last != 0 && undurable_last_.load(std::memory_order_relaxed) == last) return error_;
  return Status::OK();
}

Status LogWriter::Submit(Waiter* w, bool allow_closed) {
  bool lead = false;
  bool borrow = false;
  {
    MutexLock l(&mu_);
    if (!error_.ok()) return error_;
    if (closed_ && !allow_closed) {
      return Status::FailedPrecondition("log writer for " + dir_ + " is closed");
    }
    if (!leader_active_ && !(w->sync && syncing_)) {
      // Whoever finds the lead free takes it, with whatever is queued (say a
      // writer offered the lead that has not run yet). A synced writer waits
      // for an fdatasync in flight to pass it the lead (see PassLead).
      TakeLead(w);
      lead = true;
    } else {
      w->queued = true;
      queue_.push_back(w);
      queue_bytes_ += RequestBytes(w);
      if (!w->sync) queued_unsynced_++;
      if (gathering_ && !w->sync && !lent_) {
        // The leader sleeps, gathering: write our group ourselves.
        lent_ = true;
        borrow = true;
      } else if (gathering_ && !lent_ && (!w->sync || GatherDone())) {
        // A gathering leader lets unsynced writers go first (see LeadGroup);
        // a borrower signals it when done.
        gather_cv_.Signal();
      }
    }
  }
  if (borrow) return Borrow(w);
  while (!lead) {
    const uint8_t s = Await(w);
    if (s == Waiter::kDone) return w->status;
    if (s == Waiter::kLead) break;  // handed over: leader_active_ stayed true
    // Offered: take the lead unless a running writer took it first.
    MutexLock l(&mu_);
    if (w->queued && !leader_active_) {
      TakeLead(w);
      lead = true;
    } else {
      // Whoever took it passes it on, or marks us done; wait again.
      uint8_t expected = Waiter::kOffered;
      if (!w->state.compare_exchange_strong(expected, Waiter::kWaiting,
                                            std::memory_order_acq_rel)) {
        assert(expected == Waiter::kDone);
        return w->status;
      }
    }
  }
  return LeadGroup(w);
}

void LogWriter::TakeLead(Waiter* w) {
  assert(!leader_active_);
  leader_active_ = true;
  leaders_running_++;
  if (!w->queued) {
    w->queued = true;
    queue_bytes_ += RequestBytes(w);
    if (!w->sync) queued_unsynced_++;
    if (!w->sync && !queue_.empty()) {
      // The lead was offered to the first queued writer, an unsynced one,
      // which has not taken it yet. An unsynced writer that comes first
      // leads the groups of the writers queued before it, then its own
      // (LeadGroup): it may not pass them with a group of its key alone.
      queue_.push_back(w);
      return;
    }
  } else {
    queue_.erase(std::find(queue_.begin(), queue_.end(), w));
  }
  queue_.push_front(w);  // the leader is the first member of its group
}

void LogWriter::PassLead() {
  Waiter* next = queue_.empty() ? nullptr : queue_.front();
  if (next != nullptr && next->sync && syncing_) {
    // Its group's fdatasync would only queue behind the one in flight
    // (LogOptions::apply_before_sync), and the members that one wakes may
    // join it: it gets the lead when that fdatasync is done. An unsynced
    // writer goes ahead meanwhile.
    next = nullptr;
    if (queued_unsynced_ > 0) {
      for (Waiter* w : queue_) {
        if (!w->sync) {
          next = w;
          break;
        }
      }
    }
  }
  if (next == nullptr) {
    leader_active_ = false;
  } else if (next->sync) {
    // A synced writer gets the lead outright, so that it may gather.
    leader_active_ = true;
    leaders_running_++;
    Notify(next, Waiter::kLead);
  } else {
    leader_active_ = false;
    Notify(next, Waiter::kOffered);
  }
}

size_t LogWriter::RequestBytes(const Waiter* w) {
  return w->request == nullptr ? 0 : w->request->payload.size() + kRecordOverhead;
}

uint64_t LogWriter::FairnessKey(const Waiter* w) {
  return w->request == nullptr ? 0 : w->request->fairness_key;
}

bool LogWriter::GatherDone() const {
  return queue_.size() - queued_unsynced_ >= expected_writers_ ||
         queue_bytes_ >= options_.max_group_bytes;
}

bool LogWriter::Gather(const Waiter* self, GatherState* g) {
  // A synced writer gets the lead only once no fdatasync is in flight
  // (PassLead, Submit), and none starts while it leads.
  assert(!self->sync || !syncing_);
  if (g->over) return true;
  if (!self->sync || closed_ || sync_nanos_ == 0) {
    g->over = true;
    return true;
  }
  uint64_t now = clock_->NowNanos();
  if (g->deadline == 0) {
    // The expectation is about the members of the group that finished last;
    // once a sync time has passed since, they are not simply on their way
    // back.
    if (GatherDone() || now - last_group_done_ > sync_nanos_) {
      g->over = true;
      return true;
    }
    g->deadline = now + sync_nanos_ * kGatherNumerator / kGatherDenominator;
  }
  // The writer that completes the count, or an unsynced one that could not
  // borrow the lead, signals; a timed-out wait ends the gathering whatever
  // clock_ says. The deadline is checked on every call, so unsynced writers
  // that keep coming cannot keep the leader gathering past it. While it
  // sleeps, an unsynced writer may borrow the lead (Borrow); once awake, the
  // leader lends it no more and waits for it back, so borrowers cannot keep
  // it waiting one after another.
  for (;;) {
    while (lent_) {
      awaiting_lead_ = true;  // the borrower signals when done
      gather_cv_.Wait();
      awaiting_lead_ = false;
      now = clock_->NowNanos();
    }
    if (!error_.ok() || GatherDone() || queued_unsynced_ > 0) break;
    if (g->timed_out || now >= g->deadline) {
      g->over = true;
      break;
    }
    gathering_ = true;
    g->timed_out = !gather_cv_.WaitFor(static_cast<int64_t>((g->deadline - now + 999) / 1000));
    gathering_ = false;
    now = clock_->NowNanos();
  }
  if (!error_.ok() || GatherDone() || g->timed_out || now >= g->deadline) g->over = true;
  return g->over;
}

void LogWriter::TakeFromQueue(bool unsynced_only, std::vector<Waiter*>* group) {
  // An unsynced group holds the writes of one fairness key: that of the
  // first unsynced writer queued.
  uint64_t key = 0;
  if (unsynced_only) {
    for (const Waiter* w : queue_) {
      if (!w->sync) {
        key = FairnessKey(w);
        break;
      }
    }
  }
  auto eligible = [&](const Waiter* w) {
    return !unsynced_only || (!w->sync && FairnessKey(w) == key);
  };
  if ((queue_bytes_ <= options_.max_group_bytes || queue_.size() <= 2) &&
      (!unsynced_only || std::all_of(queue_.begin(), queue_.end(), eligible))) {
    // The common case: the whole queue, in order.
    group->assign(queue_.begin(), queue_.end());
    for (Waiter* w : *group) w->queued = false;
    queue_.clear();
    queue_bytes_ = 0;
    queued_unsynced_ = 0;
    return;
  }
  std::vector<size_t> candidates;  // indexes into queue_
  candidates.reserve(queue_.size());
  size_t bytes = 0;
  for (size_t i = 0; i < queue_.size(); i++) {
    if (!eligible(queue_[i])) continue;
    candidates.push_back(i);
    bytes += RequestBytes(queue_[i]);
  }
  std::vector<bool> taken(queue_.size(), false);
  if (bytes <= options_.max_group_bytes || candidates.size() <= 2) {
    for (size_t i : candidates) {
      taken[i] = true;
      group->push_back(queue_[i]);  // everything fits, in queue order
    }
  } else {
    std::vector<GroupCandidate> shapes;
    shapes.reserve(candidates.size());
    for (size_t i : candidates) {
      const Waiter* w = queue_[i];
      shapes.push_back(GroupCandidate{RequestBytes(w), FairnessKey(w)});
    }
    std::vector<size_t> picked;
    PickGroup(shapes, options_.max_group_bytes, &picked);
    for (size_t k : picked) {
      taken[candidates[k]] = true;
      group->push_back(queue_[candidates[k]]);
    }
  }
  std::deque<Waiter*> rest;
  for (size_t i = 0; i < queue_.size(); i++) {
    if (!taken[i]) rest.push_back(queue_[i]);
  }
  queue_.swap(rest);
  for (Waiter* w : *group) {
    w->queued = false;
    queue_bytes_ -= RequestBytes(w);
    if (!w->sync) queued_unsynced_--;
  }
}

LogWriter::Group LogWriter::FormGroup(std::vector<Waiter*> members) {
  Group g;
  g.members = std::move(members);
  for (Waiter* w : g.members) {
    g.sync |= w->sync;
    if (w->request != nullptr) {
      w->request->first_sequence = next_sequence_;
      next_sequence_ += w->request->sequence_count;
      g.records++;
    }
  }
  g.ticket = next_ticket_++;
  return g;
}

Status LogWriter::LeadGroup(Waiter* self) {
  GatherState gather;
  // Whether the unsynced group that follows the end of the gathering ran:
  // the leader's own group comes next, whatever has queued meanwhile, so
  // that a stream of unsynced writers cannot hold it up.
  bool last_early = false;
  for (;;) {
    Group group;
    bool own;
    Status stopped;
    {
      MutexLock l(&mu_);
      const bool gathered = Gather(self, &gather);
      // An fdatasync that failed after its group applied (see
      // LogOptions::apply_before_sync) stopped the writer under us.
      stopped = error_;
      // Unsynced writers queued behind a synced leader go first, in a group
      // of their own, so that they do not wait for its fdatasync. An
      // unsynced leader takes only unsynced writers (the synced ones get a
      // leader of their own: PassLead), one key's at a time, and leads the
      // groups of the keys queued before it first (see TakeLead).
      const bool early = self->sync && queued_unsynced_ > 0 && !last_early;
      if (early && gathered) last_early = true;
      std::vector<Waiter*> members;
      TakeFromQueue(/*unsynced_only=*/early || !self->sync, &members);
      own = std::find(members.begin(), members.end(), self) != members.end();
      assert(own != early || !self->sync);
      group = FormGroup(std::move(members));
      CatchUpDurable();
    }
    // Each group is done (or failed, with everything queued) before the next
    // is formed, so a failure strands nobody.
    Status s = RunGroup(self, group, /*last=*/own, stopped, /*borrowed=*/false);
    if (own || !s.ok()) return s;
  }
}

void LogWriter::CatchUpDurable() {
  if (unsynced_ && synced_segment_ == segments_->number() && synced_end_ == offset_) {
    unsynced_ = false;
  }
}

void LogWriter::SyncedGroupDone(const Group& group, uint64_t took) {
  synced_group_latency_.AddNanos(took);
  const uint64_t now = clock_->NowNanos();
  sync_nanos_ = sync_nanos_ == 0
                    ? took
                    : (sync_nanos_ * (kSyncAverageWeight - 1) + took) / kSyncAverageWeight;
  last_group_done_ = now;
  // Every synced writer in this group, and every one that queued behind it
  // meanwhile, is expected in the next one (wal/README.md, "Gathering").
  size_t synced = 0;
  for (const Waiter* w : group.members) synced += w->sync ? 1 : 0;
  expected_writers_ = synced + queue_.size() - queued_unsynced_;
}

Status LogWriter::Borrow(Waiter* self) {
  for (;;) {
    Group group;
    bool own;
    Status stopped;
    {
      MutexLock l(&mu_);
      stopped = error_;
      std::vector<Waiter*> members;
      TakeFromQueue(/*unsynced_only=*/true, &members);
      own = std::find(members.begin(), members.end(), self) != members.end();
      group = FormGroup(std::move(members));
      CatchUpDurable();
    }
    Status s = RunGroup(self, group, /*last=*/false, stopped, /*borrowed=*/true);
    if (own || !s.ok()) {
      MutexLock l(&mu_);
      lent_ = false;
      // The leader sleeps until the gathering is over unless woken; wake it
      // when it waits for the lead back or has something to do. A failure
      // stopped the writer (error_): the leader's next group fails with
      // everything queued.
      if (awaiting_lead_ || queued_unsynced_ > 0 || GatherDone() || !s.ok()) {
        gather_cv_.Signal();
      }
      if (self->queued) {
        // A group before ours failed: ours is never written.
        self->queued = false;
        queue_.erase(std::find(queue_.begin(), queue_.end(), self));
        queue_bytes_ -= RequestBytes(self);
        queued_unsynced_--;
      }
      return s;
    }
  }
}

Status LogWriter::RunGroup(Waiter* self, const Group& group, bool last, const Status& stopped,
                           bool borrowed) {
  const bool sync = group.sync;
  // A synced group with records may apply before its fdatasync, which then
  // runs while the next groups write and apply. (A Sync() barrier has
  // nothing to apply.)
  const bool sync_after_apply = sync && options_.apply_before_sync && group.records > 0;
  const uint64_t io_start = sync ? clock_->NowNanos() : 0;  // timed for gathering only
  Status s = stopped.ok() ? WriteGroup(group.members, sync && !sync_after_apply) : stopped;
  // What the fdatasync after the apply syncs. No segment switch can close it
  // meanwhile: a switch waits for the sync (WriteGroup).
  WritableFile* const sync_file = sync_after_apply ? segments_->file() : nullptr;
  const std::string sync_path = sync_after_apply ? segments_->path() : std::string();
  const uint64_t sync_end = offset_;
  const uint64_t sync_segment = segments_->number();
  // The fdatasync still to do after the apply.
  const bool deferred_sync = sync_after_apply && s.ok();
  const uint64_t write_nanos = deferred_sync ? clock_->NowNanos() - io_start : 0;

  // The leader gives up the lead after its own group, or when the writer
  // stops on an error (then everything still queued, itself included, fails).
  const bool ends = last || (!s.ok() && !borrowed);
  std::deque<Waiter*> abandoned;  // queued behind a failed group; never written
  {
    MutexLock l(&mu_);
    if (s.ok() && sync && !deferred_sync) SyncedGroupDone(group, clock_->NowNanos() - io_start);
    if (!s.ok() && borrowed) {
      // The leader, gathering, fails its next group with everything queued.
      if (error_.ok()) error_ = s;
    } else if (!s.ok()) {
      if (error_.ok()) error_ = s;
      abandoned.swap(queue_);
      for (Waiter* w : abandoned) w->queued = false;
      queue_bytes_ = 0;
      queued_unsynced_ = 0;
      leader_active_ = false;
    } else if (sync) {
      // Before applying, so the next group's I/O overlaps our apply (and the
      // fdatasync it may wait for, or, when it comes after the apply, ours).
      if (deferred_sync) {
        syncing_ = true;
        // Named before the apply makes any of them visible (see
        // UndurableSequences).
        const WriteRequest* first = nullptr;
        const WriteRequest* last = nullptr;
        for (const Waiter* w : group.members) {
          if (w->request == nullptr) continue;
          if (first == nullptr) first = w->request;
          last = w->request;
        }
        undurable_first_.store(first->first_sequence, std::memory_order_relaxed);
        undurable_last_.store(last->first_sequence + last->sequence_count - 1,
                              std::memory_order_release);
      }
      PassLead();
    }
  }
  AwaitApplyTurn(group.ticket);
  if (s.ok() && group.records > 0 && apply_) {
    std::vector<WriteRequest*> requests;
    requests.reserve(group.records);
    for (Waiter* w : group.members) {
      if (w->request != nullptr) requests.push_back(w->request);
    }
    apply_(requests.data(), requests.size());
  }
  {
    MutexLock l(&mu_);
    apply_turn_.store(group.ticket + 1, std::memory_order_release);
    apply_cv_.SignalAll();
    if (ends && !deferred_sync) {
      // An unsynced group keeps the lead until it is applied: its write is
      // short, and a next group would only wait for this apply before its
      // own.
      if (s.ok() && !sync) PassLead();
      if (--leaders_running_ == 0 && queue_.empty()) idle_cv_.SignalAll();
    }
  }
  if (deferred_sync) {
    const uint64_t sync_start = clock_->NowNanos();
    s = SyncSegmentFile(sync_file, sync_path, sync_end);
    MutexLock l(&mu_);
    syncing_ = false;
    durable_cv_.SignalAll();  // readers waiting for this group (AwaitDurable)
    if (s.ok()) {
      undurable_last_.store(0, std::memory_order_release);
      stat_syncs_.fetch_add(1, std::memory_order_relaxed);
      // The next leader finds the log durable up to here (CatchUpDurable).
      synced_segment_ = sync_segment;
      synced_end_ = sync_end;
      // The write and the fdatasync, not the apply between them.
      SyncedGroupDone(group, write_nanos + (clock_->NowNanos() - sync_start));
    } else if (error_.ok()) {
      // The writer stops; the leader finds out before its next group
      // (LeadGroup) and fails it with everything queued.
      error_ = s;
    }
    gather_cv_.SignalAll();  // a leader waiting for this sync to switch segments
    // Synced writers queued meanwhile waited for this sync to get the lead.
    if (!leader_active_ && !queue_.empty()) PassLead();
    if (--leaders_running_ == 0 && queue_.empty()) idle_cv_.SignalAll();
  }
  // From here on only the waiters are touched, never `this`, once the
  // leader is done: Close may then return and the writer may be destroyed.
  auto wake = [&s](Waiter* w) {
    w->status = s;
    Notify(w, Waiter::kDone);
  };
  for (Waiter* w : group.members) {
    if (w != self) wake(w);
  }
  for (Waiter* w : abandoned) {
    if (w != self) wake(w);
  }
  return s;
}

void LogWriter::AwaitApplyTurn(uint64_t ticket) {
  // The group before ours applies while we write: usually done by now.
  if (SpinUntil([&] { return apply_turn_.load(std::memory_order_acquire) == ticket; })) return;
  MutexLock l(&mu_);
  while (apply_turn_.load(std::memory_order_acquire) != ticket) apply_cv_.Wait();
}

Status LogWriter::WriteGroup(const std::vector<Waiter*>& group, bool sync) {
  const uint64_t segment_size = options_.segment_size;
  const uint64_t start = offset_;
  uint64_t end = start;
  size_t records = 0;
  for (const Waiter* w : group) {
    if (w->request == nullptr) continue;
    end = framer_->RecordEnd(end, *w->request);
    records++;
  }
  if (records == 0) {
    if (!sync || !unsynced_) return Status::OK();
    STRATA_RETURN_IF_ERROR(io_->Sync(segments_->file(), segments_->path()));
    unsynced_ = false;
    stat_syncs_.fetch_add(1, std::memory_order_relaxed);
    stat_groups_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

  // Frame every record into one image of the log bytes [start, marker_end).
  const uint64_t marker_end = framer_->MarkerEnd(end);
  const size_t image_size = static_cast<size_t>(marker_end - start);
  char* image;
  if (image_size <= io_->capacity()) {
    image = io_->buffer();
  } else {
    overflow_.resize(image_size);
    image = overflow_.data();
  }
  // The group's first fragment says whether all the log before it is durable.
  framer_->Begin(image, start, /*durable_before=*/!unsynced_, segments_->number());
  for (const Waiter* w : group) {
    if (w->request != nullptr) framer_->Add(*w->request);
  }
  const std::vector<GroupChunk>& chunks = framer_->Finish(end);

  if (chunks.size() > 1) {
    // The segment switch closes the current file: an fdatasync running on it
    // after its group's apply must finish first.
    MutexLock l(&mu_);
    while (syncing_) gather_cv_.Wait();
    // A failed fdatasync of the segment we would leave behind: the log may
    // have lost its end, so nothing may go after it.
    if (!error_.ok()) return error_;
  }

  // One write per segment touched; every segment but the last is synced
  // before the next one is started, the last when any member asked.
  uint64_t syncs = 0;
  for (size_t i = 0; i < chunks.size(); i++) {
    const GroupChunk& c = chunks[i];
    if (c.new_segment) {
      STRATA_RETURN_IF_ERROR(
          StartSegment(segments_->number() + 1, c.first_sequence, /*announce=*/true));
    }
    const bool last = i + 1 == chunks.size();
    const size_t n = c.end - c.begin;
    const bool want_sync = !last || sync;
    const bool do_sync = want_sync && (n > 0 || unsynced_);
    if (n == 0 && !do_sync) continue;
    STRATA_RETURN_IF_ERROR(
        io_->Write(segments_->file(), segments_->path(), c.offset, image + c.begin, n, do_sync));
    if (do_sync) syncs++;
    unsynced_ = !want_sync;
  }
  offset_ = end - (chunks.size() - 1) * segment_size;
  if (overflow_.capacity() > kKeepOverflowBytes) std::vector<char>().swap(overflow_);

  stat_records_.fetch_add(records, std::memory_order_relaxed);
  stat_groups_.fetch_add(1, std::memory_order_relaxed);
  stat_syncs_.fetch_add(syncs, std::memory_order_relaxed);
  stat_bytes_.fetch_add(end - start, std::memory_order_relaxed);
  return Status::OK();
}

Status LogWriter::StartSegment(uint64_t number, SequenceNumber first_sequence, bool announce) {
  STRATA_RETURN_IF_ERROR(segments_->Start(number, first_sequence, announce));
  offset_ = kSegmentHeaderSize;
  unsynced_ = false;
  return Status::OK();
}

Status LogWriter::ReleaseBefore(SequenceNumber sequence) {
  MutexLock release(&release_mu_);
  {
    MutexLock l(&mu_);
    if (closed_) return Status::FailedPrecondition("log writer for " + dir_ + " is closed");
  }
  return segments_->ReleaseBefore(sequence);
}

Status LogWriter::Close() {
  {
    MutexLock l(&mu_);
    if (closed_) return close_status_;
    closed_ = true;  // later Write/Sync calls fail; queued ones still complete
  }
  Waiter barrier(nullptr, /*wants_sync=*/true);
  Status s = Submit(&barrier, /*allow_closed=*/true);
  {
    MutexLock l(&mu_);
    // A writer offered the lead may not have taken it yet.
    while (leaders_running_ > 0 || !queue_.empty()) idle_cv_.Wait();
  }
  // No leader can exist any more: the leader state is ours. The barrier may
  // have gone in a group ahead of unsynced writes queued before it (groups
  // take turns by fairness key when the queue outgrows one): sync those too.
  if (s.ok() && unsynced_ && segments_->file() != nullptr && io_ != nullptr) {
    s = io_->Sync(segments_->file(), segments_->path());
    if (s.ok()) unsynced_ = false;
  }
  Status c = segments_->CloseFile();
  if (s.ok()) s = c;
  io_.reset();
  MutexLock l(&mu_);
  if (s.ok() && !error_.ok()) s = error_;
  close_status_ = s;
  return s;
}

SequenceNumber LogWriter::next_sequence() const {
  MutexLock l(&mu_);
  return next_sequence_;
}

LogWriter::Stats LogWriter::GetStats() const {
  Stats st;
  st.records = stat_records_.load(std::memory_order_relaxed);
  st.groups = stat_groups_.load(std::memory_order_relaxed);
  st.syncs = stat_syncs_.load(std::memory_order_relaxed);
  st.synced_group_latency = synced_group_latency_.Snapshot();
  st.bytes = stat_bytes_.load(std::memory_order_relaxed);
  st.segments_created = segments_->created();
  st.segments_recycled = segments_->recycled();
  MutexLock l(&mu_);
  st.queued = queue_.size();
  return st;
}

}  // namespace strata::wal
