// LogWriter: appends records to the write-ahead log (format: wal/FORMAT.md)
// with group commit. This header is the contract; how the writer meets it
// (forming groups, unsynced writes going first, passing and lending the lead,
// gathering, syncing after the apply, io_uring and the pwritev fallback,
// segments) is told in wal/README.md.
//
// Thread-safe. Concurrent writers queue under one mutex and are grouped: one
// of them, the leader, assigns the group's sequence numbers, writes all of its
// records with one write (one per segment they touch) and, if any member asked
// for durability, one fdatasync, calls the apply function once for the group
// and marks the other members done. Close must not race with the destructor.
//
// Invariants:
//   - sequence numbers are assigned contiguously in group order (each group
//     in the order its leader took its members), so log order, sequence
//     order and apply order agree;
//   - at most one group does I/O at a time (with apply_before_sync, a
//     synced group's fdatasync may overlap the next groups' writes); apply
//     runs once per group in log order, never concurrently with itself, and
//     before any member's Write returns (the next group's I/O may overlap
//     it);
//   - a record is acknowledged only after its bytes are written (handed to
//     the kernel: a crash of the process alone loses nothing acknowledged)
//     and, when any member of its group asked for sync, durable together
//     with everything before it in the log, including the segment file's
//     directory entry; so a synced write also makes every earlier unsynced
//     one durable;
//   - a segment is synced before the next one is started, so a crash can only
//     lose a suffix of the log;
//   - whenever the lead is free and writers are queued, the first of them has
//     been offered it (with apply_before_sync, the first unsynced one while
//     an fdatasync runs, whose leader passes the lead on when done), so a
//     queued writer is never stranded;
//   - after the first I/O error the writer is stopped: every later call
//     returns that error and the engine must reopen.
#ifndef STRATA_WAL_LOG_WRITER_H_
#define STRATA_WAL_LOG_WRITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/latency_recorder.h"
#include "common/mutex.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::wal {

class GroupFramer;
class SegmentIo;
class SegmentManager;

struct LogOptions {
  FileSystem* fs = FileSystem::Default();
  // Times the fdatasyncs that bound how long a leader waits for company.
  Clock* clock = Clock::Default();
  // Writes a synced group and its fdatasync as one linked io_uring submission
  // from a registered buffer, at the cost of a kernel worker's wakeup per
  // group (wal/README.md, "Writing a group", says when that pays). Off, or
  // when no ring can be set up or the file has no descriptor: pwritev +
  // fdatasync. Groups that need no fdatasync use pwritev either way.
  bool use_io_uring = true;
  // Bytes per segment file, preallocated with fallocate. Larger segments mean
  // fewer segment switches (each costs a file creation, two syncs and
  // segment_started) but coarser release. A positive multiple of kBlockSize
  // (32 KiB).
  uint64_t segment_size = 64 << 20;
  // Keep released segments as spares and reuse them: rewriting allocated
  // blocks makes fdatasync cheaper than filling fresh extents. Costs up to
  // kMaxSpareSegments * segment_size of disk.
  bool recycle_segments = true;
  // A group stops growing past this many bytes (its leader and the writer
  // that waited longest go in whatever their size): bigger groups amortize
  // the fdatasync further but make the leader's members wait longer.
  size_t max_group_bytes = 4 << 20;
  // A synced group applies once written, before its fdatasync, which then
  // runs while the groups after it write and apply; its members are still
  // acknowledged only once it is durable. Unsynced writes then need not wait
  // out other writers' fdatasyncs, but the apply function sees records a crash
  // may still lose: a reader that must not see them checks
  // UndurableSequences() and waits with AwaitDurable() (wal/README.md,
  // "Syncing after the apply").
  bool apply_before_sync = false;
  // Called with the new segment's number each time a write starts a segment
  // (not for the one Open starts: first_segment()), once its header and
  // directory entry are durable and before any record goes into it or an
  // older segment is released because of it. It runs on the leader's thread
  // while every other writer waits, maybe while the previous group applies,
  // and must not call this writer; an error stops the writer as an I/O error
  // does. May be empty.
  std::function<Status(uint64_t segment_number)> segment_started;
};  // Intentionally copyable.

struct WriteRequest {
  Slice payload;                // the record body
  uint64_t sequence_count = 1;  // sequence numbers this record consumes (>= 1)
  bool sync = true;             // acknowledge only once durable
  // When more writes are queued than one group takes (max_group_bytes),
  // writes with different keys take turns, and a group of unsynced writes
  // holds one key's only (wal/README.md, "Forming a group" and "Unsynced
  // writes"). The engine passes the tenant; 0 is as good a key as any.
  uint64_t fairness_key = 0;
  void* arg = nullptr;                // for the apply function
  SequenceNumber first_sequence = 0;  // set by the writer before apply is called
};                                    // Intentionally copyable.

// Called by the group leader once per group, after the group's records are
// written (and synced when any of them asked, unless
// LogOptions::apply_before_sync), in log order, before any
// member's Write returns; never concurrently with itself.
using ApplyFunction = std::function<void(WriteRequest* const* requests, size_t n)>;

class LogWriter {
 public:
  // Released segments kept for reuse at most; more are deleted.
  static constexpr size_t kMaxSpareSegments = 2;

  // Starts a new segment numbered after every segment (and spare) already in
  // `dir` (created if missing); the first record gets `next_sequence`.
  // `apply` may be empty. Refuses (InvalidArgument) bad options and a
  // next_sequence below a segment header's first_sequence.
  // REQUIRES: the log in `dir` went through RecoverLog (so it ends cleanly:
  // a torn tail left in place would read as mid-log corruption once new
  // segments follow it), and next_sequence == RecoveryInfo::next_sequence
  // when that log holds records (sequence numbers run on without gaps across
  // writers; a gap reads as corruption).
  static Status Open(const LogOptions& options, const std::string& dir,
                     SequenceNumber next_sequence, ApplyFunction apply,
                     std::unique_ptr<LogWriter>* result);
  ~LogWriter();  // Close()s
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Appends the record; concurrent callers are grouped (leader/follower): one
  // write and one fdatasync cover every writer waiting at that moment, after
  // the leader has briefly waited for the writers it expects (wal/README.md,
  // "Gathering"). After any I/O error the writer is stopped: this and every
  // later Write returns that error (the engine must be reopened); a
  // sequence_count of 0 is InvalidArgument.
  // REQUIRES: *request outlives the call; the writer sets its first_sequence.
  Status Write(WriteRequest* request);
  // Makes everything written so far durable.
  Status Sync();
  // The sequence numbers [*first, *last] of the synced group that applied
  // before its fdatasync (LogOptions::apply_before_sync) and is not known
  // durable (its fdatasync is running, or failed); *first > *last when there
  // is none, and there is at most one. The range is set before the group
  // applies and cleared after its fdatasync, so a reader that read the effects
  // of an apply before calling this is told of that group if still undurable.
  void UndurableSequences(SequenceNumber* first, SequenceNumber* last) const;
  // Waits until the group whose last sequence number is `last` (from
  // UndurableSequences) is durable. Returns OK once it is (or when it
  // already was), and the writer's error when its fdatasync failed: its
  // records were applied but may be lost in a crash.
  Status AwaitDurable(SequenceNumber last);
  // Every record with sequence < `sequence` is durable elsewhere: segments
  // holding only such records (never the current one) are deleted, or kept as
  // spares when recycling is on (at most kMaxSpareSegments). Calls are
  // serialized; FailedPrecondition once Close has begun.
  Status ReleaseBefore(SequenceNumber sequence);
  // Syncs what was written, closes the segment and rejects later calls with
  // FailedPrecondition. Returns the writer's error if it was stopped by one.
  // Idempotent; must not race with the destructor.
  Status Close();

  bool using_io_uring() const { return using_io_uring_; }
  // The number of the segment Open started.
  uint64_t first_segment() const { return first_segment_; }
  // The sequence number the next record will get. Records with smaller ones
  // may still be in flight.
  SequenceNumber next_sequence() const;

  // records: records written; groups: write groups (and Sync() calls that
  // had to sync); syncs: fdatasync calls made for groups; bytes: log bytes
  // written, framing included; segments_created / segments_recycled: segment
  // files made new / made from spares, the first one included; queued: the
  // writers whose group has not formed yet (a gathering leader included), at
  // this moment.
  struct Stats {
    uint64_t records = 0, groups = 0, syncs = 0, bytes = 0, segments_created = 0,
             segments_recycled = 0, queued = 0;
    // How long each synced group took from the start of its write to the end
    // of its fdatasync (the apply between them left out).
    LatencyHistogram synced_group_latency;
  };  // Intentionally copyable.
  Stats GetStats() const;

 private:
  struct Waiter;

  LogWriter(const LogOptions& options, std::string dir, SequenceNumber next_sequence,
            ApplyFunction apply);

  // Sets w's state (see Waiter in log_writer.cc).
  static void Notify(Waiter* w, uint8_t state);
  // Waits until w's state is no longer kWaiting and returns it. Unsynced
  // writers spin first (wal/README.md, "Waiting"); synced ones wait for an
  // fdatasync and sleep at once.
  static uint8_t Await(Waiter* w);
  Status Submit(Waiter* w, bool allow_closed);
  // Makes `w` the leader and puts it first in the queue, or last when it is
  // an unsynced writer taking an offered lead (wal/README.md, "Passing the
  // lead").
  // REQUIRES: no leader is active and w is not in a group.
  void TakeLead(Waiter* w) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a group's I/O: hands the lead to the first queued writer (synced),
  // offers it (unsynced), or frees it (queue empty).
  void PassLead() EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leads groups until the one holding `self` is done; returns its status.
  Status LeadGroup(Waiter* self);
  // A group: its members in log order, whether any asked for sync, how many
  // records it holds (Sync() barriers hold none) and its apply ticket.
  struct Group {
    std::vector<Waiter*> members;
    bool sync = false;
    size_t records = 0;
    uint64_t ticket = 0;
  };
  // Moves the next group's members from queue_ to *group, in queue order
  // when they all fit in max_group_bytes and by fairness key otherwise
  // (wal/internal/group_picker.h). With unsynced_only, only the unsynced
  // writers with the fairness key of the first unsynced one queued are
  // taken; the others stay queued.
  void TakeFromQueue(bool unsynced_only, std::vector<Waiter*>* group) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Assigns `members` their sequence numbers and the group its ticket.
  Group FormGroup(std::vector<Waiter*> members) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes, applies and completes a formed group. `last`: the leader's own
  // group, after which it passes the lead on; a group of unsynced writers
  // that went ahead of a synced leader keeps it.
  // `stopped`: the writer's error when the leader formed the group (the
  // group then fails without being written). `borrowed`: run by an unsynced
  // writer that borrowed the lead (Borrow); a failure then only stops the
  // writer, and the leader fails the queue.
  Status RunGroup(Waiter* self, const Group& group, bool last, const Status& stopped, bool borrowed)
      LOCKS_EXCLUDED(mu_);
  // An unsynced writer that borrowed the lead from a gathering leader: runs
  // the groups of unsynced writers queued (one key's each) until its own is
  // done, then gives the lead back (wal/README.md, "Lending the lead").
  Status Borrow(Waiter* self) LOCKS_EXCLUDED(mu_);
  // Updates the gathering state once a synced group is durable; `took`: its
  // write and fdatasync.
  void SyncedGroupDone(const Group& group, uint64_t took) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Clears unsynced_ when an fdatasync after an apply covered everything
  // written so far. Leader (or borrower) only.
  void CatchUpDurable() EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until the group `ticket` may apply (spinning first, like a member).
  void AwaitApplyTurn(uint64_t ticket) LOCKS_EXCLUDED(mu_);
  // Waits, briefly, until the queue holds the synced writers expected for
  // the next group; *state (fresh for each leadership) carries the deadline
  // across calls. Returns false, early, when unsynced writers queued (they
  // go ahead in a group of their own; then the leader calls again) and true
  // once the gathering is over. Leader only.
  struct GatherState {
    uint64_t deadline = 0;   // clock_ nanos; 0 until the first wait
    bool timed_out = false;  // a wait ran out: the gathering ends
    bool over = false;
  };
  bool Gather(const Waiter* self, GatherState* state) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GatherDone() const EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static size_t RequestBytes(const Waiter* w);
  static uint64_t FairnessKey(const Waiter* w);
  // Frames a group (GroupFramer) and writes it. Leader only.
  Status WriteGroup(const std::vector<Waiter*>& group, bool sync);
  // Starts segment `number` (SegmentManager::Start) and moves the write
  // position to its first fragment. Leader only.
  Status StartSegment(uint64_t number, SequenceNumber first_sequence, bool announce);

  const LogOptions options_;
  const std::string dir_;
  const ApplyFunction apply_;
  Clock* const clock_;
  // The log's segment files. Its current segment (file, path, number) is
  // leader state, like the fields at the end.
  const std::unique_ptr<SegmentManager> segments_;
  bool using_io_uring_ = false;  // fixed once Open returns
  uint64_t first_segment_ = 0;   // fixed once Open returns

  mutable Mutex mu_;
  std::deque<Waiter*> queue_ GUARDED_BY(mu_);
  size_t queue_bytes_ GUARDED_BY(mu_) = 0;      // RequestBytes summed over queue_
  size_t queued_unsynced_ GUARDED_BY(mu_) = 0;  // unsynced writers in queue_
  // Gathering state (wal/README.md, "Gathering"). sync_nanos_: moving
  // average of a synced group's write + fdatasync time, 0 before the first;
  // last_group_done_: when the last synced group's I/O finished;
  // expected_writers_: writers expected to queue for the next group.
  uint64_t sync_nanos_ GUARDED_BY(mu_) = 0;
  uint64_t last_group_done_ GUARDED_BY(mu_) = 0;
  size_t expected_writers_ GUARDED_BY(mu_) = 1;
  // The gathering leader sleeps on gather_cv_ and may lend the lead.
  bool gathering_ GUARDED_BY(mu_) = false;
  // An unsynced writer borrowed the lead of the gathering leader, which
  // waits until it is back (wal/README.md, "Lending the lead").
  bool lent_ GUARDED_BY(mu_) = false;
  bool awaiting_lead_ GUARDED_BY(mu_) = false;  // the leader waits for it back
  // An fdatasync that runs after its group applied (apply_before_sync) is in
  // flight; gather_cv_ is signalled when it ends.
  bool syncing_ GUARDED_BY(mu_) = false;
  // Where the last such fdatasync left the log durable: the segment and the
  // offset in it its group ended at.
  uint64_t synced_segment_ GUARDED_BY(mu_) = 0;
  uint64_t synced_end_ GUARDED_BY(mu_) = 0;
  // The sequence numbers of that fdatasync's group (UndurableSequences):
  // written under mu_, first before last, last with a release store that a
  // reader loads with acquire before first; last is 0 when none. Cleared when
  // the fdatasync succeeds, kept when it fails. durable_cv_ is signalled
  // when the fdatasync ends either way.
  std::atomic<SequenceNumber> undurable_first_{1};
  std::atomic<SequenceNumber> undurable_last_{0};
  CondVar durable_cv_;
  CondVar gather_cv_;
  // True from the moment a writer becomes leader until it hands leadership to
  // the next queued writer (stays true), offers it or finds the queue empty.
  bool leader_active_ GUARDED_BY(mu_) = false;
  // Leaders that have not finished (their apply and wake-ups may outlast the
  // hand-off); Close waits for zero.
  int leaders_running_ GUARDED_BY(mu_) = 0;
  CondVar idle_cv_;
  SequenceNumber next_sequence_ GUARDED_BY(mu_);
  uint64_t next_ticket_ GUARDED_BY(mu_) = 0;  // groups formed so far
  // The group that may apply next. Written under mu_ (apply_cv_ waits on
  // it); read without mu_ by a leader spinning for its turn: the release
  // store after an apply and the acquire load order that apply's effects
  // before the next one's.
  std::atomic<uint64_t> apply_turn_{0};
  CondVar apply_cv_;
  Status error_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  Status close_status_ GUARDED_BY(mu_);
  Mutex release_mu_;  // serializes ReleaseBefore calls

  // Leader state: used only by the writer holding leadership (or by Open and
  // Close, when no leader can exist). The hand-off under mu_ orders one
  // leader's accesses before the next one's, so no lock guards them.
  std::unique_ptr<SegmentIo> io_;
  uint64_t offset_ = 0;  // where the next fragment may go in the current segment
  bool unsynced_ = false;
  const std::unique_ptr<GroupFramer> framer_;
  std::vector<char> overflow_;  // framing space for groups larger than io_->capacity()

  // Counters for GetStats. Relaxed: each is a standalone tally read only for
  // reporting; no other data is published through them.
  std::atomic<uint64_t> stat_records_{0}, stat_groups_{0}, stat_syncs_{0}, stat_bytes_{0};
  LatencyRecorder synced_group_latency_;
};

}  // namespace strata::wal

#endif  // STRATA_WAL_LOG_WRITER_H_
