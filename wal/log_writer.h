// LogWriter: appends records to the write-ahead log (format: wal/FORMAT.md)
// with group commit.
//
// Thread-safe. Writers queue under one mutex. A writer that finds no group
// in flight takes the lead at once: it gathers (below; synced leaders only),
// forms a group of itself and the queued writers (below), assigns their
// sequence numbers, frames all of them into one buffer, writes it with one
// write and, if any member asked for durability, one fdatasync (io_uring:
// one linked write -> fdatasync submission), calls the apply function and
// marks its members done. When it passes the lead on is below.
//
// Forming a group. A group takes every queued writer it may take (below)
// when they fit in max_group_bytes. Otherwise it takes the leader, the
// writer that has waited longest, and then, within the bound, turn by turn
// one write of each WriteRequest::fairness_key (the engine passes the
// tenant), so that one key's backlog cannot keep another's small write out
// of group after group (wal/internal/group_picker.h).
//
// Unsynced writes do not wait for the fdatasync of synced writes queued
// with them. A synced leader first writes and applies the unsynced writers
// queued behind it as a group of their own, ahead of its own group in the
// log (they were not acknowledged, so either order is theirs to take), and
// does so again whenever unsynced writers queue while it gathers; once the
// gathering is over, one more such group, and then its own group takes
// everyone queued, unsynced writers that came meanwhile (or did not fit)
// included. An unsynced leader takes only unsynced writers, and the first
// writer left in the queue gets the lead after it.
//
// A group of unsynced writes holds one WriteRequest::fairness_key's writes
// (the engine passes the tenant): those of its leader, or of the first
// unsynced writer queued when it goes ahead of a synced leader. With no
// fdatasync to share, another key's writes would only lengthen its write
// and its apply: a tenant's small unsynced writes would wait for the
// neighbour's flood they happened to queue with (bench/tenant_bench).
// Synced groups take every key, to share the fdatasync. A Percolator
// prewrite (unsynced) so goes on while the commits (synced) of other
// transactions gather, and its own commit can join their fdatasync. An
// unsynced writer that queued during a group's I/O still waits for that
// group to apply: groups apply in log order.
//
// Passing the lead. A synced group passes the lead as soon as its I/O is
// done, so that the next group's I/O overlaps its apply; an unsynced group,
// whose write is short, keeps the lead until it has applied (the next group
// would only wait for that apply before its own). The lead then goes to the
// first queued writer: handed over outright when that is a synced writer (so
// that it may gather), offered when it is an unsynced one. An offer frees
// the lead: the offered writer takes it when it runs, unless a writer that
// arrives first takes it, and with it the queue. So unsynced writes never
// wait for a sleeping thread to be scheduled before the next group starts.
// An unsynced writer that takes the lead so queues last and leads the
// groups of the writers queued before it first: with groups of one key, it
// would otherwise pass them with its own key's group, and a tenant writing
// back to back could keep another's write queued group after group.
//
// Waiting. A writer whose record rides in another's group waits until it is
// marked done. A synced one waits for an fdatasync and sleeps on its
// condition variable at once. An unsynced one waits for a write and an
// apply of a few microseconds, less than a sleep and a wake-up cost, so it
// first spins for a few microseconds and sleeps only if its group is not
// done by then (its leader was descheduled, say). Up to one waiter fewer
// than there are CPUs spins on for some tens of microseconds more, about
// what a sleep and a wake-up cost on a virtual machine: a group held up by a
// large record or a slow write is then waited for without that cost, while
// the other waiters sleep and leave the CPUs to the leader. A long spinner
// that finds it was descheduled sleeps too: the CPUs are oversubscribed. A
// leader marks a spinning member done with one compare-and-swap, without a
// system call; only members that went to sleep are signalled.
//
// Syncing after the apply (LogOptions::apply_before_sync). A synced group
// is written, passes the lead on and applies; its leader then runs the
// fdatasync and acknowledges its members once it is done. Meanwhile unsynced
// writers take the lead and write and apply their groups, while synced ones
// queue: the lead goes to a synced writer only once the fdatasync is done
// (the leader that ran it passes the lead on), so that one fdatasync runs at
// a time and the members it wakes may join the next group. A group that
// starts a new segment waits for it too (the switch closes the file being
// synced). An fdatasync that fails stops the writer: the next leader fails
// its group and everything queued. The records of a group applied but not
// yet durable are its user's to hold back from readers:
// UndurableSequences() names them, AwaitDurable() waits for their fdatasync.
//
// Lending the lead. A gathering leader (below) sleeps, and an unsynced
// writer that queues meanwhile would wait for it to wake up, serve its group
// and go back to sleep: on a busy machine, more than its whole write. So the
// writer borrows the lead instead, writes and applies the groups of the
// unsynced writers queued (one key's each) until its own is done, and gives
// the lead back; the leader waits for that before it goes on, and once
// awake lends the lead no more, so that borrowers one after another cannot
// keep it past its gathering deadline. One writer borrows at a time;
// unsynced writers queued meanwhile are served by the borrower when their
// key's group comes before its own, or else by the leader, which the
// borrower wakes.
//
// Gathering. Handing leadership on as soon as the I/O is done lets the
// writers that queued during it start their I/O at once, while the members
// of the finished group are still being woken. With N busy writers that
// splits them into two halves taking turns, N/2 writes per fdatasync. So a
// synced group's leader records how many synced writers it expects next:
// its group's plus those queued behind it, all likely to write again. The
// next leader, if it wants sync and comes within one sync time of that
// group's end, waits until the queue holds that many synced writers (or
// max_group_bytes), for at most half the recent write + fdatasync time (a
// moving average), so the wait never costs more than a fraction of the sync
// it may save. The writer completing the count wakes it, and so does every
// unsynced writer (which goes ahead, above). A lone writer expects only
// itself and never waits; writers that stop writing cost one bounded wait,
// after which the expectation shrinks. Waiting leaves the disk idle while
// the members come back, but with N writers each fdatasync covers about N
// writes instead of N/2: a clear gain when fdatasyncs are slow or contended,
// about even when one takes as long as the members' way back
// (bench/write_bench).
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
#include "common/mutex.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::wal {

class SegmentIo;
class SegmentManager;

struct LogOptions {
  FileSystem* fs = FileSystem::Default();
  // Times the fdatasyncs that bound how long a leader waits for company.
  Clock* clock = Clock::Default();
  // io_uring submits a group's write and fdatasync with one system call from
  // a registered buffer, but the kernel runs the fdatasync on a worker
  // thread: one more wakeup per group, which costs more than it saves when
  // the CPUs are busy (bench/wal_bench shows both). Falls back to pwritev +
  // fdatasync automatically when a ring can't be set up or the file has no
  // descriptor (fault-injecting file systems). Groups that need no fdatasync
  // are written with pwritev either way.
  bool use_io_uring = true;
  // Bytes per segment file, preallocated with fallocate. Larger segments mean
  // fewer segment switches (each costs a file creation, two syncs and
  // segment_started, for the engine a manifest write and sync) but
  // coarser release. A positive multiple of kBlockSize (32 KiB).
  uint64_t segment_size = 64 << 20;
  // Keep released segments as spares and reuse them: rewriting allocated
  // blocks makes fdatasync cheaper than filling fresh extents. Costs up to
  // kMaxSpareSegments * segment_size of disk.
  bool recycle_segments = true;
  // A group stops growing past this many bytes (its leader and the writer
  // that waited longest go in whatever their size): bigger groups amortize
  // the fdatasync further but make the leader's members wait longer.
  size_t max_group_bytes = 4 << 20;
  // A synced group applies (the apply function gets its records) once
  // written, before its fdatasync, which then runs while the groups after it
  // write and apply; its members are still acknowledged only once it is
  // durable. Off, a synced group applies after its fdatasync, and an
  // unsynced write that queues meanwhile waits for it: a Percolator prewrite
  // (unsynced) waits out the fdatasync of other transactions' commits. On,
  // the apply function sees records that a crash may still lose; a reader
  // that must not see them checks UndurableSequences() and waits with
  // AwaitDurable() (the engine does). See "Syncing after the apply" above.
  bool apply_before_sync = false;
  // Called by the leader each time a write starts a new segment (not for the
  // one Open starts; first_segment() says which that is), with the new
  // segment's number, once its header and directory entry are durable and
  // before any record goes into it or an older segment is released because
  // of it. An error stops the writer as an I/O error does. It runs on a
  // writer's thread holding the lead (every other writer waits behind it),
  // maybe while the previous group applies; it must not call this writer.
  // The engine records the segment in its manifest, so that a missing newest
  // segment is found when the log is next recovered. May be empty.
  std::function<Status(uint64_t segment_number)> segment_started;
};  // Intentionally copyable.

struct WriteRequest {
  Slice payload;                      // the record body
  uint64_t sequence_count = 1;        // sequence numbers this record consumes (>= 1)
  bool sync = true;                   // acknowledge only once durable
  // When more writes are queued than one group takes (max_group_bytes),
  // writes with different keys take turns (wal/internal/group_picker.h); a
  // group of unsynced writes holds one key's only (see "Unsynced writes"
  // above). The engine passes the tenant; 0 is as good a key as any.
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
  // REQUIRES: the log in `dir` went through RecoverLog (so it ends cleanly:
  // a torn tail left in place would read as mid-log corruption once new
  // segments follow it), and next_sequence == RecoveryInfo::next_sequence
  // when that log holds records (sequence numbers run on without gaps across
  // writers; a gap reads as corruption). Open refuses a next_sequence below
  // a segment header's first_sequence. `apply` may be empty.
  static Status Open(const LogOptions& options, const std::string& dir,
                     SequenceNumber next_sequence, ApplyFunction apply,
                     std::unique_ptr<LogWriter>* result);
  ~LogWriter();  // Close()s
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Thread-safe. Appends the record; concurrent callers are grouped
  // (leader/follower): one write and one fdatasync cover every writer waiting
  // at that moment, after the leader has briefly waited for the writers it
  // expects (see "Gathering" above). After any I/O error the writer is
  // stopped: this and every later Write returns that error (the engine must
  // be reopened).
  Status Write(WriteRequest* request);
  // Makes everything written so far durable.
  Status Sync();
  // The sequence numbers [*first, *last] of the synced group that applied
  // before its fdatasync (LogOptions::apply_before_sync) and is not known
  // durable: its fdatasync is running, or failed. *first > *last when there
  // is none. At most one such group exists at a time. A reader that read
  // the effects of an apply before calling this is told about that group if
  // it is still undurable: the range is set before the group applies and
  // cleared after its fdatasync.
  void UndurableSequences(SequenceNumber* first, SequenceNumber* last) const;
  // Waits until the group whose last sequence number is `last` (from
  // UndurableSequences) is durable. Returns OK once it is (or when it
  // already was), and the writer's error when its fdatasync failed: its
  // records were applied but may be lost in a crash.
  Status AwaitDurable(SequenceNumber last);
  // Every record with sequence < `sequence` is durable elsewhere: segments
  // holding only such records (never the current one) are deleted, or kept as
  // spares when recycling is on (at most kMaxSpareSegments).
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
  };  // Intentionally copyable.
  Stats GetStats() const;

 private:
  struct Waiter;
  struct Chunk;

  LogWriter(const LogOptions& options, std::string dir, SequenceNumber next_sequence,
            ApplyFunction apply);

  // Sets w's state (see Waiter in log_writer.cc).
  static void Notify(Waiter* w, uint8_t state);
  // Waits until w's state is no longer kWaiting and returns it. Unsynced
  // writers spin first (see "Waiting" above); synced ones wait for an
  // fdatasync and sleep at once.
  static uint8_t Await(Waiter* w);
  Status Submit(Waiter* w, bool allow_closed);
  // Makes `w` the leader and puts it first in the queue, or last when it is
  // an unsynced writer taking an offered lead (see "Passing the lead").
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
  // done, then gives the lead back (see "Lending the lead").
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
    uint64_t deadline = 0;  // clock_ nanos; 0 until the first wait
    bool timed_out = false;  // a wait ran out: the gathering ends
    bool over = false;
  };
  bool Gather(const Waiter* self, GatherState* state) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GatherDone() const EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static size_t RequestBytes(const Waiter* w);
  static uint64_t FairnessKey(const Waiter* w);
  // Frames and writes a group. Leader only.
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
  size_t queue_bytes_ GUARDED_BY(mu_) = 0;  // RequestBytes summed over queue_
  size_t queued_unsynced_ GUARDED_BY(mu_) = 0;  // unsynced writers in queue_
  // Gathering state (see the header comment). sync_nanos_: moving average of
  // a synced group's write + fdatasync time, 0 before the first;
  // last_group_done_: when the last synced group's I/O finished;
  // expected_writers_: writers expected to queue for the next group.
  uint64_t sync_nanos_ GUARDED_BY(mu_) = 0;
  uint64_t last_group_done_ GUARDED_BY(mu_) = 0;
  size_t expected_writers_ GUARDED_BY(mu_) = 1;
  // The gathering leader sleeps on gather_cv_ and may lend the lead.
  bool gathering_ GUARDED_BY(mu_) = false;
  // An unsynced writer borrowed the lead of the gathering leader, which
  // waits until it is back (see "Lending the lead").
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
  std::vector<char> overflow_;  // framing space for groups larger than io_->capacity()
  std::vector<Chunk> chunks_;

  // Counters for GetStats. Relaxed: each is a standalone tally read only for
  // reporting; no other data is published through them.
  std::atomic<uint64_t> stat_records_{0}, stat_groups_{0}, stat_syncs_{0}, stat_bytes_{0};
};

}  // namespace strata::wal

#endif  // STRATA_WAL_LOG_WRITER_H_
