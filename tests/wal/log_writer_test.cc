// Tests of LogWriter: round trips of every record shape, group commit under
// concurrency, the apply contract, io_uring vs. fallback, segment recycling
// and release, and error handling.
#include "wal/log_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "common/fault_injection_fs.h"
#include "util/fake_clock.h"
#include "util/forwarding_fs.h"
#include "util/gated_sync_fs.h"
#include "wal/internal/segment_io.h"
#include "wal/log_reader.h"
#include "wal_test_util.h"

namespace strata::wal::test {
namespace {

using strata::test::GatedSyncFileSystem;
using strata::test::ScratchDir;

std::unique_ptr<LogWriter> OpenWriter(const LogOptions& options, const std::string& dir,
                                      SequenceNumber next, ApplyFunction apply = nullptr) {
  std::unique_ptr<LogWriter> w;
  Status s = LogWriter::Open(options, dir, next, std::move(apply), &w);
  EXPECT_OK(s);
  return w;
}

// A power failure under the writers of `*w`: the file system stops at once,
// `*crashed` tells the writer threads to end, and the data never synced is
// dropped (even rounds) or torn (odd rounds). Then *got and *info are what
// recovery finds in `dir`.
void CrashAndRecover(FaultInjectionFileSystem* fs, std::atomic<bool>* crashed,
                     std::vector<std::thread>* threads, std::unique_ptr<LogWriter>* w,
                     const std::string& dir, int round, std::vector<Rec>* got,
                     RecoveryInfo* info) {
  fs->SetFilesystemActive(false);  // the instant of the crash
  crashed->store(true);
  for (auto& t : *threads) t.join();
  w->reset();
  Random rnd(round);
  if (round % 2 == 0) {
    ASSERT_OK(fs->DropUnsyncedData());
  } else {
    ASSERT_OK(fs->TearUnsyncedData(&rnd));
  }
  fs->SetFilesystemActive(true);
  ASSERT_OK(Recover(dir, RecoveryMode::kTolerateTornTail, got, info, fs)) << "round " << round;
}

// Parameters: the I/O path, and whether synced groups apply before their
// fdatasync (LogOptions::apply_before_sync).
class LogWriterTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  bool uring() const { return std::get<0>(GetParam()); }
  LogOptions Options(uint64_t segment_size = 64 * 1024) const {
    LogOptions o = SmallOptions(uring(), segment_size);
    o.apply_before_sync = std::get<1>(GetParam());
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(IoPath, LogWriterTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& p) {
                           return std::string(std::get<0>(p.param) ? "IoUring" : "Fallback") +
                                  (std::get<1>(p.param) ? "ApplyBeforeSync" : "");
                         });

TEST_P(LogWriterTest, UsesTheRequestedIoPath) {
  ScratchDir dir("wal");
  auto w = OpenWriter(Options(), dir.path(), 1);
  EXPECT_EQ(w->using_io_uring(), uring());
  ASSERT_OK(w->Close());
}

TEST_P(LogWriterTest, RoundTripsEveryRecordShape) {
  ScratchDir dir("wal");
  const uint64_t kSegment = 64 * 1024;
  // Body = 9-byte prefix + payload; block 0 has kBlockSize - 44 bytes after
  // the segment header, less 11 for the fragment header.
  const size_t fills_first_block = kBlockSize - kSegmentHeaderSize - kFragmentHeaderSize - 9;
  const std::vector<size_t> sizes = {
      0,  // empty payload
      1,
      100,
      fills_first_block,    // ends exactly at a block boundary
      kBlockSize,           // exactly block-sized payload
      kBlockSize - 20,      // leaves a tail shorter than a fragment header
      3 * kBlockSize + 17,  // spans several blocks
      200 * 1024,           // larger than a segment
      0,
      3 * 1024 * 1024 + 5,  // larger than the framing buffer and many segments
      7,
  };
  std::vector<std::string> payloads;
  for (size_t i = 0; i < sizes.size(); i++) payloads.push_back(MakePayload(i, sizes[i]));
  std::vector<Rec> written;
  {
    auto w = OpenWriter(Options(kSegment), dir.path(), 1000);
    for (size_t i = 0; i < payloads.size(); i++) {
      WriteRequest r;
      r.payload = payloads[i];
      r.sequence_count = 1 + i % 3;
      ASSERT_OK(w->Write(&r));
      written.push_back(Rec{r.first_sequence, r.sequence_count, payloads[i]});
    }
    ASSERT_OK(w->Close());
  }
  EXPECT_EQ(written.front().first, 1000u);
  for (size_t i = 1; i < written.size(); i++) {
    EXPECT_EQ(written[i].first, written[i - 1].first + written[i - 1].count);
  }
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_FALSE(info.tail_dropped);
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(got[i] == written[i]) << "record " << i;
  EXPECT_EQ(info.next_sequence, written.back().first + written.back().count);

  // Every fragment type occurs, and fragments never cross a block boundary.
  std::set<FragmentType> types;
  for (const auto& f : Fragments(dir.path())) {
    types.insert(f.type);
    EXPECT_GE(f.position.offset, kSegmentHeaderSize);
  }
  EXPECT_EQ(types.size(), 4u);
}

TEST_P(LogWriterTest, ManyRecordsAcrossSegmentsAndReopens) {
  ScratchDir dir("wal");
  Random rnd(strata::test::TestSeed());
  const int kRecords = strata::test::LongTests() ? 40000 : 4000;
  std::vector<Rec> written;
  SequenceNumber next = 1;
  for (int round = 0; round < 3; round++) {
    if (round > 0) {
      std::vector<Rec> got;
      RecoveryInfo info;
      ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
      ASSERT_EQ(got.size(), written.size());
      next = info.next_sequence;
    }
    auto w = OpenWriter(Options(), dir.path(), next);
    for (int i = 0; i < kRecords / 3; i++) {
      const std::string p = MakePayload(written.size(), rnd.Skewed(12));
      WriteRequest r;
      r.payload = p;
      r.sequence_count = 1 + rnd.Uniform(4);
      r.sync = rnd.OneIn(16);
      ASSERT_OK(w->Write(&r));
      written.push_back(Rec{r.first_sequence, r.sequence_count, p});
    }
    ASSERT_OK(w->Close());
  }
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); i++) ASSERT_TRUE(got[i] == written[i]) << "record " << i;
  EXPECT_GT(SegmentPaths(dir.path()).size(), 3u);
}

TEST_P(LogWriterTest, EmptyWriterLeavesItsSequenceInTheHeader) {
  ScratchDir dir("wal");
  {
    auto w = OpenWriter(Options(), dir.path(), 77);
    EXPECT_EQ(w->next_sequence(), 77u);
    ASSERT_OK(w->Close());
  }
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(info.next_sequence, 77u);
}

// Several threads write synced records; each must come back exactly once, in
// the order apply saw them, with contiguous sequence numbers.
TEST_P(LogWriterTest, ConcurrentWritersAreGroupedAndOrdered) {
  ScratchDir dir("wal");
  const int kThreads = 8;
  const int kPerThread = strata::test::LongTests() ? 2000 : 300;
  std::mutex applied_mu;
  std::vector<std::string> applied;  // payloads in apply order
  std::atomic<int> in_apply{0};
  std::atomic<bool> overlapped{false};
  SequenceNumber expected_next = 1;
  bool out_of_order = false;
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    if (in_apply.fetch_add(1) != 0) overlapped = true;
    std::lock_guard<std::mutex> l(applied_mu);
    for (size_t i = 0; i < n; i++) {
      if (reqs[i]->first_sequence != expected_next) out_of_order = true;
      expected_next = reqs[i]->first_sequence + reqs[i]->sequence_count;
      applied.push_back(reqs[i]->payload.ToString());
    }
    in_apply.fetch_sub(1);
  };
  LogOptions options = Options(256 * 1024);
  auto w = OpenWriter(options, dir.path(), 1, apply);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Random rnd(t + 1);
      for (int i = 0; i < kPerThread; i++) {
        std::string p =
            std::to_string(t) + ":" + std::to_string(i) + ":" + std::string(rnd.Skewed(10), 'x');
        WriteRequest r;
        r.payload = p;
        r.sequence_count = 1 + rnd.Uniform(3);
        if (!w->Write(&r).ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  const LogWriter::Stats stats = w->GetStats();
  ASSERT_OK(w->Close());
  EXPECT_FALSE(overlapped.load());
  EXPECT_FALSE(out_of_order);
  EXPECT_EQ(stats.records, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_LT(stats.syncs, stats.records) << "no group commit happened";

  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), applied.size());
  std::map<int, int> next_index;
  std::set<std::string> seen;
  for (size_t i = 0; i < got.size(); i++) {
    ASSERT_EQ(got[i].payload, applied[i]) << "log order differs from apply order at " << i;
    ASSERT_TRUE(seen.insert(got[i].payload).second) << "duplicate " << got[i].payload;
    const int t = std::stoi(got[i].payload);
    const int idx = std::stoi(got[i].payload.substr(got[i].payload.find(':') + 1));
    ASSERT_EQ(idx, next_index[t]++) << "thread " << t << " out of order";
    if (i > 0) {
      ASSERT_EQ(got[i].first, got[i - 1].first + got[i - 1].count);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
}

// Apply runs once per group, before any member's Write returns, never
// concurrently, with first_sequence set; a Sync() alone applies nothing.
TEST_P(LogWriterTest, ApplyContract) {
  ScratchDir dir("wal");
  const int kThreads = 6, kPerThread = 200;
  std::vector<std::atomic<bool>> done(kThreads * kPerThread);
  std::atomic<int> calls{0}, empty_calls{0}, in_apply{0}, overlaps{0};
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    if (in_apply.fetch_add(1) != 0) overlaps++;
    calls++;
    if (n == 0) empty_calls++;
    for (size_t i = 0; i < n; i++) {
      done[reinterpret_cast<uintptr_t>(reqs[i]->arg)].store(true);
    }
    std::this_thread::yield();
    in_apply.fetch_sub(1);
  };
  auto w = OpenWriter(Options(), dir.path(), 5, apply);
  std::atomic<int> not_applied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        const uintptr_t id = static_cast<uintptr_t>(t * kPerThread + i);
        WriteRequest r;
        r.payload = "p";
        r.sync = (i % 2) == 0;
        r.arg = reinterpret_cast<void*>(id);
        EXPECT_OK(w->Write(&r));
        if (!done[id].load()) not_applied++;
        if (i % 50 == 0) {
          EXPECT_OK(w->Sync());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(not_applied.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(empty_calls.load(), 0);
  // Groups that only synced did not call apply.
  EXPECT_GT(calls.load(), 0);
  EXPECT_LE(static_cast<uint64_t>(calls.load()), w->GetStats().groups);
  EXPECT_EQ(w->next_sequence(), 5u + kThreads * kPerThread);
  ASSERT_OK(w->Close());
}

TEST_P(LogWriterTest, MaxGroupBytesBoundsGroups) {
  ScratchDir dir("wal");
  LogOptions options = Options(1 << 20);
  options.max_group_bytes = 4096;
  std::atomic<size_t> largest{0};
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += reqs[i]->payload.size();
    if (bytes > largest) largest = bytes;
  };
  auto w = OpenWriter(options, dir.path(), 1, apply);
  std::vector<std::thread> threads;
  const std::string payload(1000, 'q');
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; i++) {
        WriteRequest r;
        r.payload = payload;
        EXPECT_OK(w->Write(&r));
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_OK(w->Close());
  EXPECT_LE(largest.load(), 4096u);
}

// With a slow fdatasync, writers that arrive during a group's I/O form the
// next group while the members of the finished one are still being woken;
// without gathering, groups alternate between two halves of the writers. A
// new leader waits (up to half a sync, here 5 ms) for the writers it
// expects, so groups hold most of them. Writers need far less than that to
// come back, even on a loaded machine, so the bound is not what the
// assertion depends on.
TEST(LogWriterGatherTest, GroupsHoldMoreThanHalfTheWriters) {
  ScratchDir dir("wal");
  SlowSyncFileSystem fs(/*sync_micros=*/10000);
  LogOptions options = SmallOptions(/*uring=*/false, 1 << 20);
  options.fs = &fs;
  auto w = OpenWriter(options, dir.path(), 1);
  const int kThreads = 8;
  const int kPerThread = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; i++) {
        WriteRequest r;
        r.payload = "gather";
        EXPECT_OK(w->Write(&r));
      }
    });
  }
  for (auto& t : threads) t.join();
  const LogWriter::Stats stats = w->GetStats();
  ASSERT_OK(w->Close());
  ASSERT_EQ(stats.records, static_cast<uint64_t>(kThreads * kPerThread));
  const double per_group = static_cast<double>(stats.records) / static_cast<double>(stats.groups);
  EXPECT_GT(per_group, kThreads / 2 + 1) << stats.groups << " groups";
}

// Runs `write` on a thread; done() says whether it returned.
class AsyncWrite {
 public:
  explicit AsyncWrite(std::function<Status()> write)
      : thread_([this, write = std::move(write)] {
          status_ = write();
          done_.set_value();
        }) {}
  ~AsyncWrite() { thread_.join(); }
  // Waits up to `seconds` for the write to return.
  bool DoneWithin(int seconds) {
    return done_future_.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready;
  }
  Status status() {
    done_future_.wait();
    return status_;
  }

 private:
  std::promise<void> done_;
  std::future<void> done_future_ = done_.get_future();
  Status status_;
  std::thread thread_;
};

Status WriteKeyed(LogWriter* w, const std::string& payload, bool sync, uint64_t key) {
  WriteRequest r;
  r.payload = payload;
  r.sync = sync;
  r.fairness_key = key;
  return w->Write(&r);
}

Status WriteOne(LogWriter* w, const std::string& payload, bool sync) {
  return WriteKeyed(w, payload, sync, /*key=*/0);
}

// A writer stopped by the error `first`: a later write fails with the same
// error, and so do Sync and Close.
void ExpectStoppedBy(LogWriter* w, const Status& first) {
  Status later = WriteOne(w, "later", /*sync=*/false);
  EXPECT_TRUE(later.IsIOError());
  EXPECT_EQ(later.message(), first.message());
  EXPECT_TRUE(w->Sync().IsIOError());
  EXPECT_TRUE(w->Close().IsIOError());
}

// An unsynced write queued behind a group's fdatasync waits for that group,
// but not for the fdatasync of a synced write queued with it: it goes ahead
// in a group of its own, before the synced one in the log and in the applies.
TEST(LogWriterUnsyncedTest, UnsyncedWriteDoesNotWaitForAQueuedSyncedOne) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  std::mutex applied_mu;
  std::vector<std::string> applied;
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    std::lock_guard<std::mutex> l(applied_mu);
    for (size_t i = 0; i < n; i++) applied.push_back(reqs[i]->payload.ToString());
  };
  auto w = OpenWriter(options, dir.path(), 1, apply);
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    fs.AwaitGatedSyncs(1);  // a's group is in its fdatasync: b and u queue
    AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });
    AsyncWrite u([&] { return WriteOne(w.get(), "u", false); });
    // Give b and u time to queue (in either order: the outcome is the same).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fs.Permit(1);  // a's fdatasync ends; b's will wait
    const bool u_done = u.DoneWithin(30);
    const bool b_done = b.DoneWithin(0);
    fs.Permit(1000);
    EXPECT_TRUE(u_done) << "the unsynced write waited for b's fdatasync";
    EXPECT_FALSE(b_done);
    EXPECT_OK(u.status());
    EXPECT_OK(a.status());
    EXPECT_OK(b.status());
  }
  ASSERT_OK(w->Close());
  EXPECT_EQ(applied, (std::vector<std::string>{"a", "u", "b"}));
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].payload, "u");
}

// A synced leader gathering the writers it expects lets an unsynced write
// go ahead at once, without its fdatasync, and goes on gathering.
TEST(LogWriterUnsyncedTest, GatheringLeaderLetsUnsyncedWritesGoFirst) {
  ScratchDir dir("wal");
  ::strata::test::FakeClock clock;
  GatedSyncFileSystem fs(&clock);
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  options.clock = &clock;  // every fdatasync seems to take 100 s
  auto w = OpenWriter(options, dir.path(), 1);
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    fs.AwaitGatedSyncs(1);
    AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });
    // b queues during a's fdatasync, so the next leader (b) expects two
    // synced writers and waits up to half a sync (50 s) for the second.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    fs.Permit(1);  // for a's fdatasync only
    EXPECT_OK(a.status());
    AsyncWrite u([&] { return WriteOne(w.get(), "u", false); });
    const bool u_done = u.DoneWithin(20);
    const int gated = fs.gated();
    fs.Permit(1000);
    EXPECT_TRUE(u_done) << "the unsynced write waited for the synced group";
    EXPECT_EQ(gated, 1) << "b stopped gathering";
    AsyncWrite c([&] { return WriteOne(w.get(), "c", true); });
    EXPECT_OK(u.status());
    EXPECT_OK(b.status());
    EXPECT_OK(c.status());
  }
  ASSERT_OK(w->Close());
  EXPECT_EQ(fs.gated(), 2) << "b and c went in one group";
}

// With apply_before_sync, a synced group applies once written: it is visible
// while its fdatasync runs, and its writer is answered only after that.
// Unsynced writes go on meanwhile; a synced one waits for the fdatasync in
// flight before it writes and syncs its own group.
TEST(LogWriterApplyBeforeSyncTest, SyncedGroupAppliesBeforeItsSyncAndIsAnsweredAfter) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  options.apply_before_sync = true;
  std::mutex applied_mu;
  std::vector<std::string> applied;
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    std::lock_guard<std::mutex> l(applied_mu);
    for (size_t i = 0; i < n; i++) applied.push_back(reqs[i]->payload.ToString());
  };
  auto applied_now = [&] {
    std::lock_guard<std::mutex> l(applied_mu);
    return applied;
  };
  auto w = OpenWriter(options, dir.path(), 1, apply);
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    fs.AwaitGatedSyncs(1);  // a is written and in its fdatasync
    EXPECT_EQ(applied_now(), (std::vector<std::string>{"a"}));
    EXPECT_FALSE(a.DoneWithin(0)) << "answered before its fdatasync";
    AsyncWrite u([&] { return WriteOne(w.get(), "u", false); });
    EXPECT_TRUE(u.DoneWithin(30)) << "the unsynced write waited for a's fdatasync";
    EXPECT_OK(u.status());
    AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(fs.gated(), 1) << "b synced while a's fdatasync ran";
    EXPECT_EQ(applied_now(), (std::vector<std::string>{"a", "u"}));
    EXPECT_FALSE(b.DoneWithin(0));
    fs.Permit(1);  // a's fdatasync ends; b leads, writes and syncs
    EXPECT_OK(a.status());
    fs.AwaitGatedSyncs(2);
    EXPECT_EQ(applied_now(), (std::vector<std::string>{"a", "u", "b"}));
    fs.Permit(1000);
    EXPECT_OK(b.status());
  }
  ASSERT_OK(w->Close());
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].payload, "a");
  EXPECT_EQ(got[1].payload, "u");
  EXPECT_EQ(got[2].payload, "b");
}

// With apply_before_sync, the writer names the sequence numbers of the
// group that applied but is not durable yet, and AwaitDurable waits for its
// fdatasync; when that fdatasync fails, they stay named and AwaitDurable
// returns the writer's error.
TEST(LogWriterApplyBeforeSyncTest, NamesTheUndurableGroupUntilItsSyncEnds) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  options.apply_before_sync = true;
  auto w = OpenWriter(options, dir.path(), 1);
  auto undurable = [&] {
    SequenceNumber first = 0, last = 0;
    w->UndurableSequences(&first, &last);
    return first > last ? std::pair<SequenceNumber, SequenceNumber>(0, 0)
                        : std::pair<SequenceNumber, SequenceNumber>(first, last);
  };
  using Range = std::pair<SequenceNumber, SequenceNumber>;
  ASSERT_OK(WriteOne(w.get(), "x", true));  // sequence 1, durable
  EXPECT_EQ(undurable(), Range(0, 0));
  EXPECT_OK(w->AwaitDurable(1));
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });  // sequence 2
    fs.AwaitGatedSyncs(1);
    EXPECT_EQ(undurable(), Range(2, 2));
    AsyncWrite u([&] { return WriteOne(w.get(), "u", false); });  // 3: applied, not named
    EXPECT_TRUE(u.DoneWithin(30));
    EXPECT_EQ(undurable(), Range(2, 2));
    AsyncWrite wait([&] { return w->AwaitDurable(2); });
    EXPECT_FALSE(wait.DoneWithin(1)) << "AwaitDurable returned during the fdatasync";
    fs.Permit(1);
    EXPECT_OK(wait.status());
    EXPECT_OK(a.status());
    EXPECT_EQ(undurable(), Range(0, 0));
    EXPECT_OK(w->AwaitDurable(2));
  }
  {
    AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });  // sequence 4
    fs.AwaitGatedSyncs(2);
    EXPECT_EQ(undurable(), Range(4, 4));
    AsyncWrite wait([&] { return w->AwaitDurable(4); });
    fs.FailNextPermitted();
    fs.Permit(1);
    const Status failed = b.status();
    EXPECT_TRUE(failed.IsIOError()) << failed.ToString();
    EXPECT_EQ(wait.status().message(), failed.message());
    EXPECT_EQ(undurable(), Range(4, 4)) << "the failed group's records may be lost";
    EXPECT_EQ(w->AwaitDurable(4).message(), failed.message());
    EXPECT_OK(w->AwaitDurable(2));
  }
  fs.Permit(1000);
  EXPECT_TRUE(w->Close().IsIOError());
}

// With apply_before_sync, a group that starts a new segment waits for the
// fdatasync in flight (the switch closes the file being synced).
TEST(LogWriterApplyBeforeSyncTest, SegmentSwitchWaitsForTheSyncInFlight) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false, /*segment_size=*/64 * 1024);
  options.fs = &fs;
  options.apply_before_sync = true;
  auto w = OpenWriter(options, dir.path(), 1);
  fs.Hold();
  const std::string big = MakePayload(1, 80 * 1024);  // longer than a segment
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    fs.AwaitGatedSyncs(1);
    AsyncWrite u([&] { return WriteOne(w.get(), big, false); });
    EXPECT_FALSE(u.DoneWithin(1)) << "the segment switched under a running fdatasync";
    EXPECT_EQ(fs.gated(), 1);
    fs.Permit(1000);
    EXPECT_OK(a.status());
    EXPECT_OK(u.status());
  }
  ASSERT_OK(w->Close());
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].payload, big);
}

// With apply_before_sync, a group that would start a new segment while the
// fdatasync of the one it leaves behind runs fails when that fdatasync
// fails: nothing may go after a log end that may be lost.
TEST(LogWriterApplyBeforeSyncTest, NoSegmentSwitchAfterAFailedSync) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false, /*segment_size=*/64 * 1024);
  options.fs = &fs;
  options.apply_before_sync = true;
  std::atomic<int> started{0};
  options.segment_started = [&](uint64_t) {
    started++;
    return Status::OK();
  };
  auto w = OpenWriter(options, dir.path(), 1);
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    fs.AwaitGatedSyncs(1);
    AsyncWrite u([&] { return WriteOne(w.get(), MakePayload(1, 80 * 1024), false); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // u waits for a's sync
    fs.FailNextPermitted();
    fs.Permit(1000);
    EXPECT_TRUE(a.status().IsIOError()) << a.status().ToString();
    EXPECT_TRUE(u.status().IsIOError()) << u.status().ToString();
  }
  EXPECT_EQ(started.load(), 0) << "a segment started after the failed fdatasync";
  EXPECT_TRUE(w->Close().IsIOError());
}

// With apply_before_sync, an fdatasync that fails after its group applied
// fails that group's writers and stops the writer, as any I/O error does.
TEST(LogWriterApplyBeforeSyncTest, FailedSyncAfterTheApplyStopsTheWriter) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/false);
  o.fs = &fs;
  o.apply_before_sync = true;
  std::vector<std::string> applied;  // one apply at a time, and this thread reads after
  auto w = OpenWriter(o, dir.path(), 1, [&](WriteRequest* const* reqs, size_t n) {
    for (size_t i = 0; i < n; i++) applied.push_back(reqs[i]->payload.ToString());
  });
  WriteAll(w.get(), {"before"});
  fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
  Status s = WriteOne(w.get(), "fails", true);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(applied, (std::vector<std::string>{"before", "fails"}))
      << "applied before its fdatasync";
  fs.ClearFaults();
  EXPECT_TRUE(WriteOne(w.get(), "later", true).IsIOError());
  ExpectStoppedBy(w.get(), s);
  EXPECT_EQ(applied.size(), 2u);
}

// A failed write of the unsynced group a synced leader lets go first fails
// the leader and every writer queued behind it; nobody is left waiting.
TEST(LogWriterUnsyncedTest, FailedUnsyncedGroupFailsTheWritersBehindIt) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  std::mutex mu;
  std::condition_variable cv;
  bool in_first_apply = false, release = false;
  int applies = 0;
  auto apply = [&](WriteRequest* const*, size_t) {
    std::unique_lock<std::mutex> l(mu);
    if (applies++ > 0) return;
    in_first_apply = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  };
  auto w = OpenWriter(options, dir.path(), 1, apply);
  AsyncWrite u0([&] { return WriteOne(w.get(), "u0", false); });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return in_first_apply; });  // u0 leads, and keeps the lead
  }
  // Synced b and c, then unsynced u queue (the sleeps make this order
  // likely; any order must end the same way). b gets the lead and lets u
  // go first, whose write fails.
  AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  AsyncWrite c([&] { return WriteOne(w.get(), "c", true); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  AsyncWrite u([&] { return WriteOne(w.get(), "u", false); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  fs.FailAfter(FaultOp::kWrite, 0, 1, EIO);
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
    cv.notify_all();
  }
  EXPECT_OK(u0.status());
  for (AsyncWrite* x : {&b, &c, &u}) {
    ASSERT_TRUE(x->DoneWithin(30)) << "a writer was left waiting";
    EXPECT_TRUE(x->status().IsIOError()) << x->status().ToString();
  }
  EXPECT_TRUE(w->Close().IsIOError());
}

// Unsynced writers that never stop coming do not keep a gathering synced
// leader from its own group past the gathering's bound (half a sync, here
// 50 ms): its write ends while they go on. Progress is counted in groups
// (each apply takes 1 ms), not in time: the bound allows 20 times what the
// write needs.
TEST(LogWriterUnsyncedTest, GatheringEndsWhileUnsyncedWritersKeepComing) {
  ScratchDir dir("wal");
  SlowSyncFileSystem fs(/*sync_micros=*/100'000);
  LogOptions options = SmallOptions(/*uring=*/false, 1 << 20);
  options.fs = &fs;
  // Each group's apply takes a while, so the next unsynced writers are
  // queued whenever the leader looks.
  std::atomic<uint64_t> groups{0};
  auto apply = [&](WriteRequest* const*, size_t) {
    groups.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  auto w = OpenWriter(options, dir.path(), 1, apply);
  std::atomic<bool> stop{false};
  std::vector<std::thread> unsynced;
  {
    AsyncWrite a([&] { return WriteOne(w.get(), "a", true); });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a is in its fdatasync
    // b queues behind a, so b's group expects two synced writers; none
    // other comes.
    AsyncWrite b([&] { return WriteOne(w.get(), "b", true); });
    for (int t = 0; t < 4; t++) {
      unsynced.emplace_back([&] {
        while (!stop.load()) EXPECT_OK(WriteOne(w.get(), "u", false));
      });
    }
    // About 100 groups go by before b is done: the rest of a's fdatasync
    // and the gathering.
    while (!b.DoneWithin(0) && groups.load() < 4000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const uint64_t groups_before_b = groups.load();
    stop.store(true);
    for (auto& t : unsynced) t.join();
    EXPECT_LT(groups_before_b, 2000u) << "the synced write waited for the unsynced writers";
    EXPECT_OK(a.status());
    EXPECT_OK(b.status());
  }
  ASSERT_OK(w->Close());
}

// Records each apply's writes as "payload/key" strings; the first apply
// waits until release() (or the recorder's destruction).
class GroupRecorder {
 public:
  ~GroupRecorder() { release(); }
  ApplyFunction apply() {
    return [this](WriteRequest* const* reqs, size_t n) {
      std::unique_lock<std::mutex> l(mu_);
      if (!held_once_) {
        held_once_ = true;
        cv_.notify_all();
        cv_.wait(l, [&] { return released_; });
      }
      std::vector<std::string> group;
      for (size_t i = 0; i < n; i++) {
        group.push_back(reqs[i]->payload.ToString() + "/" + std::to_string(reqs[i]->fairness_key));
      }
      groups_.push_back(std::move(group));
    };
  }
  // Waits until the first apply has begun (and, unless released, waits).
  void AwaitFirstApply() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return held_once_; });
  }
  void release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<std::vector<std::string>> groups() {
    std::lock_guard<std::mutex> l(mu_);
    return groups_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_once_ = false;
  bool released_ = false;
  std::vector<std::vector<std::string>> groups_;
};

// Waits until `n` writers of `w` wait for their group to form (up to 30 s).
bool AwaitQueued(LogWriter* w, uint64_t n) {
  for (int i = 0; i < 30000; i++) {
    if (w->GetStats().queued >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// The keys in `group` (payloads "name/key").
std::set<std::string> KeysOf(const std::vector<std::string>& group) {
  std::set<std::string> keys;
  for (const auto& r : group) keys.insert(r.substr(r.find('/') + 1));
  return keys;
}

// Unsynced writes queued behind an unsynced group go in groups of one
// fairness key each: a tenant's small write does not write and apply
// another tenant's with it.
TEST(LogWriterUnsyncedTest, UnsyncedGroupsHoldOneKey) {
  ScratchDir dir("wal");
  GroupRecorder recorder;
  auto w = OpenWriter(SmallOptions(/*uring=*/false), dir.path(), 1, recorder.apply());
  {
    // u0's group keeps the lead while it applies (held): the others queue.
    AsyncWrite u0([&] { return WriteKeyed(w.get(), "u0", false, 1); });
    recorder.AwaitFirstApply();
    AsyncWrite v1([&] { return WriteKeyed(w.get(), "v1", false, 2); });
    AsyncWrite u1([&] { return WriteKeyed(w.get(), "u1", false, 1); });
    AsyncWrite v2([&] { return WriteKeyed(w.get(), "v2", false, 2); });
    AsyncWrite u2([&] { return WriteKeyed(w.get(), "u2", false, 1); });
    EXPECT_TRUE(AwaitQueued(w.get(), 4));
    recorder.release();
    for (AsyncWrite* x : {&u0, &v1, &u1, &v2, &u2}) EXPECT_OK(x->status());
  }
  ASSERT_OK(w->Close());
  const auto groups = recorder.groups();
  size_t writes = 0;
  for (const auto& g : groups) {
    EXPECT_EQ(KeysOf(g).size(), 1u) << testing::PrintToString(g);
    writes += g.size();
  }
  EXPECT_EQ(writes, 5u);
  // Two groups after u0's: every queued write of one key, then the other's.
  EXPECT_EQ(groups.size(), 3u) << testing::PrintToString(groups);
}

// A writer that takes the lead offered to a queued one (here the offered
// writer sleeps, so the writer of the group before comes back first) leads
// the queued writer's group before its own: a tenant writing back to back
// does not keep another's write queued group after group.
TEST(LogWriterUnsyncedTest, WriterTakingAnOfferedLeadLetsTheQueuedGoFirst) {
  ScratchDir dir("wal");
  GroupRecorder recorder;
  auto w = OpenWriter(SmallOptions(/*uring=*/false), dir.path(), 1, recorder.apply());
  {
    AsyncWrite u([&] {
      STRATA_RETURN_IF_ERROR(WriteKeyed(w.get(), "u0", false, 1));  // applies held
      return WriteKeyed(w.get(), "u1", false, 1);                   // at once after
    });
    recorder.AwaitFirstApply();
    AsyncWrite v([&] { return WriteKeyed(w.get(), "v", false, 2); });
    EXPECT_TRUE(AwaitQueued(w.get(), 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // v sleeps
    recorder.release();
    EXPECT_OK(u.status());
    EXPECT_OK(v.status());
  }
  ASSERT_OK(w->Close());
  EXPECT_EQ(recorder.groups(),
            (std::vector<std::vector<std::string>>{{"u0/1"}, {"v/2"}, {"u1/1"}}));
}

// The unsynced writers a synced leader lets go ahead go in groups of one
// key each too; its own synced group takes every key.
TEST(LogWriterUnsyncedTest, UnsyncedGroupsAheadOfASyncedLeaderHoldOneKey) {
  ScratchDir dir("wal");
  GatedSyncFileSystem fs;
  LogOptions options = SmallOptions(/*uring=*/false);
  options.fs = &fs;
  GroupRecorder recorder;
  recorder.release();
  auto w = OpenWriter(options, dir.path(), 1, recorder.apply());
  fs.Hold();
  {
    AsyncWrite a([&] { return WriteKeyed(w.get(), "a", true, 9); });
    fs.AwaitGatedSyncs(1);  // a's group is in its fdatasync: the others queue
    AsyncWrite b([&] { return WriteKeyed(w.get(), "b", true, 9); });
    EXPECT_TRUE(AwaitQueued(w.get(), 1));  // b leads next
    AsyncWrite u1([&] { return WriteKeyed(w.get(), "u1", false, 1); });
    AsyncWrite v1([&] { return WriteKeyed(w.get(), "v1", false, 2); });
    AsyncWrite u2([&] { return WriteKeyed(w.get(), "u2", false, 1); });
    EXPECT_TRUE(AwaitQueued(w.get(), 4));  // b, u1, v1 and u2
    fs.Permit(1000);
    for (AsyncWrite* x : {&a, &b, &u1, &v1, &u2}) EXPECT_OK(x->status());
  }
  ASSERT_OK(w->Close());
  size_t writes = 0;
  for (const auto& g : recorder.groups()) {
    const bool synced = std::any_of(
        g.begin(), g.end(), [](const std::string& r) { return r[0] == 'a' || r[0] == 'b'; });
    if (!synced) {
      EXPECT_EQ(KeysOf(g).size(), 1u) << testing::PrintToString(g);
    }
    writes += g.size();
  }
  EXPECT_EQ(writes, 5u);
}

TEST_P(LogWriterTest, SyncCoversUnsyncedWrites) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions options = Options();
  options.fs = &fs;
  auto w = OpenWriter(options, dir.path(), 1);
  EXPECT_FALSE(w->using_io_uring());  // fault-injecting files have no descriptor
  std::vector<std::string> payloads;
  for (int i = 0; i < 50; i++) payloads.push_back(MakePayload(i, 300));
  auto written = WriteAll(w.get(), payloads, 1, /*sync=*/false);
  const uint64_t syncs_before = w->GetStats().syncs;
  ASSERT_OK(w->Sync());
  EXPECT_EQ(w->GetStats().syncs, syncs_before + 1);
  ASSERT_OK(w->Sync());  // nothing new: no fdatasync
  EXPECT_EQ(w->GetStats().syncs, syncs_before + 1);
  // Unsynced writes after the Sync are lost by a power failure.
  WriteAll(w.get(), {"lost"}, 1, /*sync=*/false);
  fs.SetFilesystemActive(false);
  w.reset();
  ASSERT_OK(fs.DropUnsyncedData());
  fs.SetFilesystemActive(true);
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info));
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(got[i] == written[i]);
}

// Many threads mixing unsynced writes, synced writes and Sync() calls, with
// groups small enough that the queue often holds more than one (so groups are
// picked by fairness key), on both I/O paths: every record is applied once,
// in log order, before its Write returns, never two applies at once; each
// thread's records are in its order; the log reads back exactly what was
// acknowledged.
TEST_P(LogWriterTest, MixedSyncedAndUnsyncedWriters) {
  ScratchDir dir("wal");
  const int kThreads = 12;
  const int kPerThread = strata::test::LongTests() ? 3000 : 400;
  std::mutex applied_mu;
  std::vector<std::string> applied;
  SequenceNumber expected_next = 1;
  std::atomic<int> in_apply{0};
  std::atomic<bool> overlapped{false}, out_of_order{false};
  std::vector<std::atomic<bool>> done(kThreads * kPerThread);
  auto apply = [&](WriteRequest* const* reqs, size_t n) {
    if (in_apply.fetch_add(1) != 0) overlapped = true;
    {
      std::lock_guard<std::mutex> l(applied_mu);
      for (size_t i = 0; i < n; i++) {
        if (reqs[i]->first_sequence != expected_next) out_of_order = true;
        expected_next = reqs[i]->first_sequence + reqs[i]->sequence_count;
        applied.push_back(reqs[i]->payload.ToString());
        done[reinterpret_cast<uintptr_t>(reqs[i]->arg)].store(true);
      }
    }
    in_apply.fetch_sub(1);
  };
  LogOptions options = Options(256 * 1024);
  options.max_group_bytes = 2048;
  auto w = OpenWriter(options, dir.path(), 1, apply);
  std::atomic<int> failures{0}, not_applied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Random rnd(strata::test::TestSeed() + t);
      for (int i = 0; i < kPerThread; i++) {
        const uintptr_t id = static_cast<uintptr_t>(t * kPerThread + i);
        const std::string p = std::to_string(t) + ":" + std::to_string(i) + ":" +
                              std::string(rnd.OneIn(50) ? 3000 : rnd.Skewed(9), 'm');
        WriteRequest r;
        r.payload = p;
        r.sequence_count = 1 + rnd.Uniform(3);
        r.sync = rnd.OneIn(4);
        r.fairness_key = static_cast<uint64_t>(t % 3);
        r.arg = reinterpret_cast<void*>(id);
        if (!w->Write(&r).ok()) failures++;
        if (!done[id].load()) not_applied++;
        if (rnd.OneIn(100) && !w->Sync().ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_OK(w->Close());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(not_applied.load(), 0);
  EXPECT_FALSE(overlapped.load());
  EXPECT_FALSE(out_of_order.load());

  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), static_cast<size_t>(kThreads * kPerThread));
  ASSERT_EQ(applied.size(), got.size());
  std::map<int, int> next_index;
  for (size_t i = 0; i < got.size(); i++) {
    ASSERT_EQ(got[i].payload, applied[i]) << "log order differs from apply order at " << i;
    const int t = std::stoi(got[i].payload);
    const int idx = std::stoi(got[i].payload.substr(got[i].payload.find(':') + 1));
    ASSERT_EQ(idx, next_index[t]++) << "thread " << t << " out of order";
  }
}

// A synced write makes durable every write acknowledged before it started,
// synced or not, from any thread. Writers mostly write unsynced; the test
// thread makes one synced write and the power fails the moment it returns:
// it and every write acknowledged before it began must survive.
TEST(LogWriterCrashTest, SyncedWriteCoversEarlierUnsyncedOnes) {
  const int kRounds = strata::test::LongTests() ? 60 : 12;
  for (int round = 0; round < kRounds; round++) {
    ScratchDir dir("wal");
    FaultInjectionFileSystem fs;
    LogOptions o = SmallOptions(/*uring=*/false, 64 * 1024);
    o.fs = &fs;
    auto w = OpenWriter(o, dir.path(), 1);
    std::mutex mu;
    std::vector<std::string> acked;  // in the order the writes returned
    std::atomic<bool> crashed{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; t++) {
      threads.emplace_back([&, t] {
        Random rnd(round * 100 + t + 1);
        for (int i = 0; !crashed.load(); i++) {
          const std::string p =
              std::to_string(t) + "/" + std::to_string(i) + "/" + std::string(rnd.Skewed(11), 'u');
          WriteRequest r;
          r.payload = p;
          r.sync = rnd.OneIn(10);
          if (!w->Write(&r).ok()) break;
          std::lock_guard<std::mutex> l(mu);
          acked.push_back(p);
        }
      });
    }
    // A loaded machine may not have run a writer yet: wait for some acks.
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + round % 7));
    size_t before = 0;
    for (int waited = 0; waited < 10'000; waited++) {
      {
        std::lock_guard<std::mutex> l(mu);
        before = acked.size();  // these returned before the synced write began
      }
      if (before > 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    WriteRequest last;
    last.payload = "the synced write";
    last.sync = true;
    ASSERT_OK(w->Write(&last));
    std::vector<Rec> got;
    RecoveryInfo info;
    ASSERT_NO_FATAL_FAILURE(
        CrashAndRecover(&fs, &crashed, &threads, &w, dir.path(), round, &got, &info));
    std::set<std::string> found;
    for (const Rec& r : got) found.insert(r.payload);
    EXPECT_EQ(found.count(last.payload.ToString()), 1u) << "round " << round;
    ASSERT_GT(before, 0u) << "no write was acknowledged in 10 s";
    for (size_t i = 0; i < before; i++) {
      ASSERT_EQ(found.count(acked[i]), 1u)
          << "record " << acked[i] << " acknowledged before the synced write is lost, round "
          << round;
    }
  }
}

// The two I/O paths frame identically: the segment files are byte-for-byte
// equal and read back the same records.
TEST(LogWriterEquivalenceTest, FallbackMatchesIoUring) {
  ScratchDir a("wal-uring"), b("wal-fallback");
  std::vector<std::string> payloads;
  Random rnd(42);
  for (int i = 0; i < 600; i++) payloads.push_back(MakePayload(i, rnd.Skewed(15)));
  for (auto* d : {&a, &b}) {
    auto w = OpenWriter(SmallOptions(d == &a, 128 * 1024), d->path(), 1);
    ASSERT_EQ(w->using_io_uring(), d == &a);
    // The same sync pattern, so the same group starts carry kDurableBeforeFlag.
    for (size_t i = 0; i < payloads.size(); i++) {
      WriteAll(w.get(), {payloads[i]}, 2, /*sync=*/i % 3 == 0);
    }
    ASSERT_OK(w->Close());
  }
  auto pa = SegmentPaths(a.path()), pb = SegmentPaths(b.path());
  ASSERT_EQ(pa.size(), pb.size());
  ASSERT_GT(pa.size(), 2u);
  for (size_t i = 0; i < pa.size(); i++) {
    EXPECT_EQ(pa[i].substr(pa[i].rfind('/')), pb[i].substr(pb[i].rfind('/')));
    EXPECT_TRUE(ReadBytes(pa[i]) == ReadBytes(pb[i])) << pa[i];
  }
  std::vector<Rec> ga, gb;
  RecoveryInfo ia, ib;
  ASSERT_OK(Recover(a.path(), RecoveryMode::kAbsoluteConsistency, &ga, &ia));
  ASSERT_OK(Recover(b.path(), RecoveryMode::kAbsoluteConsistency, &gb, &ib));
  EXPECT_TRUE(ga == gb);
  EXPECT_EQ(ga.size(), payloads.size());
}

TEST(LogWriterOpenTest, NumbersAfterSegmentsAndSpares) {
  ScratchDir dir("wal");
  {
    auto w = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), 1);
    WriteAll(w.get(), {"a", "b"});
    ASSERT_OK(w->Close());
  }
  // A spare with a high number (left by an earlier writer) pushes numbering on.
  ASSERT_OK(
      FileSystem::Default()->RenameFile(dir.Join(SegmentFileName(1)), dir.Join(SpareFileName(9))));
  auto w = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), 100);
  ASSERT_OK(w->Close());
  EXPECT_TRUE(FileSystem::Default()->FileExists(dir.Join(SegmentFileName(10))));
  // The spare was recycled for it.
  EXPECT_FALSE(FileSystem::Default()->FileExists(dir.Join(SpareFileName(9))));
  EXPECT_EQ(w->GetStats().segments_recycled, 1u);
}

TEST(LogWriterOpenTest, RejectsBadArguments) {
  ScratchDir dir("wal");
  std::unique_ptr<LogWriter> w;
  LogOptions o;
  o.segment_size = kBlockSize + 1;
  EXPECT_TRUE(LogWriter::Open(o, dir.path(), 1, nullptr, &w).IsInvalidArgument());
  o.segment_size = 0;
  EXPECT_TRUE(LogWriter::Open(o, dir.path(), 1, nullptr, &w).IsInvalidArgument());
  o = LogOptions();
  o.max_group_bytes = 0;
  EXPECT_TRUE(LogWriter::Open(o, dir.path(), 1, nullptr, &w).IsInvalidArgument());

  {
    auto ok = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), 50);
    WriteAll(ok.get(), {"x"});
    ASSERT_OK(ok->Close());
  }
  // The log already holds sequence 50: continuing below it is refused.
  Status s = LogWriter::Open(SmallOptions(/*uring=*/true), dir.path(), 10, nullptr, &w);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  auto ok = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), 51);
  WriteRequest r;
  r.sequence_count = 0;
  EXPECT_TRUE(ok->Write(&r).IsInvalidArgument());
  ASSERT_OK(ok->Close());
  r.sequence_count = 1;
  EXPECT_TRUE(ok->Write(&r).IsFailedPrecondition());
  EXPECT_TRUE(ok->Sync().IsFailedPrecondition());
  EXPECT_OK(ok->Close());  // idempotent
}

// Released segments become spares and are reused; nothing from their earlier
// life is ever read back.
TEST_P(LogWriterTest, RecyclesReleasedSegments) {
  ScratchDir dir("wal");
  const uint64_t kSegment = 64 * 1024;
  auto w = OpenWriter(Options(kSegment), dir.path(), 1);
  std::vector<Rec> written;
  auto write_some = [&](int n, int salt) {
    for (int i = 0; i < n; i++) {
      auto recs = WriteAll(w.get(), {MakePayload(written.size() * 31 + salt, 900)}, 1,
                           /*sync=*/i % 50 == 0);
      written.insert(written.end(), recs.begin(), recs.end());
    }
  };
  write_some(500, 0);  // ~7 segments
  const size_t segments_before = SegmentPaths(dir.path()).size();
  ASSERT_GT(segments_before, 4u);
  // Release all but the last ~100 records.
  const SequenceNumber keep_from = written[written.size() - 100].first;
  ASSERT_OK(w->ReleaseBefore(keep_from));
  EXPECT_EQ(CountFiles(dir.path(), ".spare"), LogWriter::kMaxSpareSegments);
  EXPECT_LT(SegmentPaths(dir.path()).size(), segments_before);
  write_some(300, 1);
  EXPECT_GE(w->GetStats().segments_recycled, 2u);
  ASSERT_OK(w->Close());

  // The log is a suffix of what was written, starting at or before keep_from.
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.front().first, keep_from);
  const size_t offset = written.size() - got.size();
  for (size_t i = 0; i < got.size(); i++) ASSERT_TRUE(got[i] == written[offset + i]) << i;

  // A recycled segment whose new content ends early: the reader stops at the
  // end of the new data even though old fragments follow it in the file.
  auto w2 = OpenWriter(Options(kSegment), dir.path(), info.next_sequence);
  ASSERT_OK(w2->ReleaseBefore(info.next_sequence));
  ASSERT_OK(w2->Close());
  auto w3 = OpenWriter(Options(kSegment), dir.path(), info.next_sequence);
  EXPECT_EQ(w3->GetStats().segments_recycled, 1u);
  auto tail = WriteAll(w3.get(), {"short"});
  ASSERT_OK(w3->Close());
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == tail[0]);
}

TEST(LogWriterReleaseTest, NeverReleasesTheCurrentSegment) {
  ScratchDir dir("wal");
  LogOptions o = SmallOptions(/*uring=*/true);
  o.recycle_segments = false;
  auto w = OpenWriter(o, dir.path(), 1);
  auto recs = WriteAll(w.get(), {MakePayload(0, 100000), "b"});
  ASSERT_OK(w->ReleaseBefore(UINT64_MAX));
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  EXPECT_EQ(CountFiles(dir.path(), ".spare"), 0u);
  ASSERT_OK(w->Close());
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  // The remaining segment starts inside the big record: its tail is skipped.
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == recs[1]);
}

TEST(LogWriterReleaseTest, ReleasesSegmentsOfAnEarlierWriter) {
  ScratchDir dir("wal");
  SequenceNumber next;
  {
    auto w = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), 1);
    for (int i = 0; i < 200; i++) WriteAll(w.get(), {MakePayload(i, 1000)}, 1, /*sync=*/false);
    next = w->next_sequence();
    ASSERT_OK(w->Close());
  }
  const size_t old_segments = SegmentPaths(dir.path()).size();
  ASSERT_GT(old_segments, 2u);
  auto w = OpenWriter(SmallOptions(/*uring=*/true), dir.path(), next);
  ASSERT_OK(w->ReleaseBefore(100));  // keeps the segments holding 100..
  EXPECT_LT(SegmentPaths(dir.path()).size(), old_segments + 1);
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.front().first, 100u);
  ASSERT_OK(w->ReleaseBefore(next));
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  ASSERT_OK(w->Close());
}

// ---- Errors ----------------------------------------------------------------

TEST(LogWriterErrorTest, FailedSyncStopsTheWriter) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/true);
  o.fs = &fs;
  auto w = OpenWriter(o, dir.path(), 1);
  WriteAll(w.get(), {"before"});
  fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
  WriteRequest r;
  r.payload = "fails";
  Status s = w->Write(&r);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  fs.ClearFaults();
  ExpectStoppedBy(w.get(), s);
}

TEST(LogWriterErrorTest, NoSpaceIsResourceExhausted) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/true);
  o.fs = &fs;
  auto w = OpenWriter(o, dir.path(), 1);
  fs.FailAfter(FaultOp::kWrite, 0, -1, ENOSPC);
  // Concurrent writers all see the error, queued ones included.
  std::vector<std::thread> threads;
  std::atomic<int> exhausted{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; i++) {
        WriteRequest r;
        r.payload = "x";
        if (w->Write(&r).IsResourceExhausted()) exhausted++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(exhausted.load(), 20);
  // The space came back, but the writer stays stopped.
  fs.ClearFaults();
  WriteRequest r;
  r.payload = "later";
  EXPECT_TRUE(w->Write(&r).IsResourceExhausted());
  EXPECT_TRUE(w->Close().IsResourceExhausted());
}

TEST(LogWriterErrorTest, FailedSegmentSwitchStopsTheWriter) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/true, kBlockSize);
  o.fs = &fs;
  auto w = OpenWriter(o, dir.path(), 1);
  fs.FailAfter(FaultOp::kSyncDir, 0, -1, EIO);
  WriteRequest r;
  const std::string big = MakePayload(1, 3 * kBlockSize);
  r.payload = big;
  EXPECT_TRUE(w->Write(&r).IsIOError());
  r.payload = "small";
  EXPECT_TRUE(w->Write(&r).IsIOError());
}

// segment_started hears of every segment a write starts, in order, once the
// segment is there under its name, and not of the one Open starts
// (first_segment()); an error from it stops the writer.
TEST(LogWriterSegmentTest, SegmentStartedHearsOfEachNewSegmentFirst) {
  ScratchDir dir("wal");
  LogOptions o = SmallOptions(/*uring=*/false, kBlockSize);
  std::vector<uint64_t> started;
  Status fail;
  o.segment_started = [&](uint64_t number) {
    started.push_back(number);
    // Durable under its name already.
    EXPECT_TRUE(FileSystem::Default()->FileExists(JoinPath(dir.path(), SegmentFileName(number))));
    return fail;
  };
  auto w = OpenWriter(o, dir.path(), 1);
  const uint64_t first = w->first_segment();
  EXPECT_EQ(SegmentPaths(dir.path()).size(), 1u);
  const std::string big = MakePayload(1, kBlockSize / 2);
  for (int i = 0; i < 8; i++) {
    WriteRequest r;
    r.payload = big;
    ASSERT_OK(w->Write(&r));
  }
  ASSERT_FALSE(started.empty());
  for (size_t i = 0; i < started.size(); i++) EXPECT_EQ(started[i], first + 1 + i);
  EXPECT_EQ(SegmentPaths(dir.path()).size(), started.size() + 1);
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_EQ(got.size(), 8u);

  fail = Status::IOError("manifest write failed");
  WriteRequest r;
  r.payload = big;
  Status s;
  for (int i = 0; i < 8 && s.ok(); i++) s = w->Write(&r);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  r.payload = "small";
  EXPECT_TRUE(w->Write(&r).IsIOError());
}

// io_uring reports failures in completion entries: a descriptor that cannot be
// written makes the write's cqe->res negative, which must become an error
// naming the file and offset.
TEST(LogWriterErrorTest, IoUringCompletionErrorsBecomeStatuses) {
  ScratchDir dir("wal");
  ReadOnlyFdFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/true);
  o.fs = &fs;
  auto w = OpenWriter(o, dir.path(), 1);
  ASSERT_TRUE(w->using_io_uring());
  WriteRequest r;
  r.payload = "doomed";
  Status s = w->Write(&r);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find(SegmentFileName(1)), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset " + std::to_string(kSegmentHeaderSize)), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(w->Write(&r).IsIOError());
}

TEST(SegmentIoTest, UringMapsErrnoAndHandlesSyncOnly) {
  ScratchDir dir("wal");
  std::string why;
  auto io = NewUringSegmentIo(1 << 16, &why);
  ASSERT_NE(io, nullptr) << why;
  std::unique_ptr<WritableFile> f;
  ASSERT_OK(FileSystem::Default()->NewWritableFile(dir.Join("f"), FileOpenOptions{}, &f));
  // From the registered buffer and from elsewhere.
  std::memcpy(io->buffer(), "hello", 5);
  ASSERT_OK(io->Write(f.get(), "f", 0, io->buffer(), 5, /*sync=*/true));
  const std::string other = " world";
  ASSERT_OK(io->Write(f.get(), "f", 5, other.data(), other.size(), /*sync=*/false));
  ASSERT_OK(io->Sync(f.get(), "f"));
  ASSERT_OK(f->Close());
  EXPECT_EQ(ReadBytes(dir.Join("f")), "hello world");
  EXPECT_TRUE(SegmentIoError("write", "f", 0, ENOSPC).IsResourceExhausted());
  EXPECT_TRUE(SegmentIoError("write", "f", 0, EIO).IsIOError());
}

// A file whose descriptor, as the ring sees it, is open read-only: a write
// submitted through the ring fails with EBADF and cancels the fdatasync
// linked behind it. Everything else goes to the real file.
class ReadOnlyFdFile final : public strata::test::ForwardingWritableFile {
 public:
  ReadOnlyFdFile(std::unique_ptr<WritableFile> base, const std::string& path)
      : ForwardingWritableFile(std::move(base)),
        ro_fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~ReadOnlyFdFile() override {
    if (ro_fd_ >= 0) ::close(ro_fd_);
  }
  int fd() const override { return ro_fd_; }

 private:
  const int ro_fd_;
};

// A synced write through the ring that fails returns the error, naming the
// file and the offset (the fdatasync linked behind it is cancelled), and
// later writes through the same ring go on as before.
TEST(SegmentIoTest, AFailedSyncedWriteIsReportedAndTheRingGoesOn) {
  ScratchDir dir("wal");
  std::string why;
  auto io = NewUringSegmentIo(1 << 16, &why);
  ASSERT_NE(io, nullptr) << why;
  const std::string bad_path = dir.Join("read_only");
  std::unique_ptr<WritableFile> base;
  ASSERT_OK(FileSystem::Default()->NewWritableFile(bad_path, FileOpenOptions{}, &base));
  ReadOnlyFdFile bad(std::move(base), bad_path);
  ASSERT_GE(bad.fd(), 0);
  const std::string piece = MakePayload(1, 500);
  std::memcpy(io->buffer(), piece.data(), piece.size());
  for (int i = 0; i < 3; i++) {
    const Status s = io->Write(&bad, bad_path, 4096, io->buffer(), piece.size(), /*sync=*/true);
    ASSERT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.message().find("log write " + bad_path + " at offset 4096"), std::string::npos)
        << s.ToString();
  }
  std::unique_ptr<WritableFile> f;
  ASSERT_OK(FileSystem::Default()->NewWritableFile(dir.Join("f"), FileOpenOptions{}, &f));
  ASSERT_OK(io->Write(f.get(), "f", 0, io->buffer(), piece.size(), /*sync=*/true));
  const std::string more = MakePayload(2, 200);
  ASSERT_OK(io->Write(f.get(), "f", piece.size(), more.data(), more.size(), /*sync=*/true));
  ASSERT_OK(io->Sync(f.get(), "f"));
  ASSERT_OK(f->Close());
  EXPECT_EQ(ReadBytes(dir.Join("f")), piece + more);
}

// ---- Crashes ----------------------------------------------------------------

// Writers race a simulated power failure: every record acknowledged as synced
// survives, and the log recovers cleanly to a contiguous prefix.
TEST(LogWriterCrashTest, AcknowledgedRecordsSurvivePowerLoss) {
  const int kRounds = strata::test::LongTests() ? 30 : 6;
  for (int round = 0; round < kRounds; round++) {
    ScratchDir dir("wal");
    FaultInjectionFileSystem fs;
    LogOptions o = SmallOptions(/*uring=*/false, 64 * 1024);
    o.fs = &fs;
    o.apply_before_sync = round % 2 == 1;  // the fdatasync runs while others write
    auto w = OpenWriter(o, dir.path(), 1);
    std::mutex mu;
    std::map<std::string, SequenceNumber> synced;  // payload -> first sequence
    std::atomic<bool> crashed{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
      threads.emplace_back([&, t] {
        Random rnd(round * 100 + t);
        for (int i = 0; !crashed.load(); i++) {
          const std::string p =
              std::to_string(t) + "/" + std::to_string(i) + "/" + std::string(rnd.Skewed(13), 'z');
          WriteRequest r;
          r.payload = p;
          r.sync = rnd.OneIn(2);
          if (!w->Write(&r).ok()) break;
          if (r.sync) {
            std::lock_guard<std::mutex> l(mu);
            synced[p] = r.first_sequence;
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + round * 5));
    std::vector<Rec> got;
    RecoveryInfo info;
    ASSERT_NO_FATAL_FAILURE(
        CrashAndRecover(&fs, &crashed, &threads, &w, dir.path(), round, &got, &info));
    std::map<std::string, SequenceNumber> found;
    for (size_t i = 0; i < got.size(); i++) {
      found[got[i].payload] = got[i].first;
      if (i > 0) {
        ASSERT_EQ(got[i].first, got[i - 1].first + got[i - 1].count);
      }
    }
    for (const auto& [p, seq] : synced) {
      auto it = found.find(p);
      ASSERT_NE(it, found.end()) << "synced record lost: " << p << " round " << round;
      EXPECT_EQ(it->second, seq);
    }
    // Appending after recovery and recovering again is clean.
    auto w2 = OpenWriter(o, dir.path(), std::max<SequenceNumber>(info.next_sequence, 1));
    auto more = WriteAll(w2.get(), {"after-1", "after-2"});
    ASSERT_OK(w2->Close());
    std::vector<Rec> again;
    ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &again, &info, &fs));
    ASSERT_EQ(again.size(), got.size() + 2);
    EXPECT_TRUE(again[got.size()] == more[0]);
  }
}

}  // namespace
}  // namespace strata::wal::test
