// The progress file (gc/FORMAT.md): what is written reads back, a torn last
// append is dropped at any cut, damage that a crash cannot cause is an
// error, the worked example's bytes are the documented ones; and the
// subtraction of finished ranges from a round's (possibly re-split) tasks.
#include "gc/progress_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/coding.h"
#include "common/file_system.h"
#include "common/hash.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::gc {
namespace {

class ProgressLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<ProgressLog> Open() {
    std::unique_ptr<ProgressLog> log;
    Status s = ProgressLog::Open(FileSystem::Default(), path_, &log);
    EXPECT_OK(s);
    return log;
  }
  std::string Contents() {
    std::string c;
    EXPECT_OK(ReadFileToString(FileSystem::Default(), path_, &c));
    return c;
  }
  void Overwrite(const std::string& contents) {
    ASSERT_OK(WriteFileAtomically(FileSystem::Default(), path_, contents));
  }
  Status OpenStatus() {
    std::unique_ptr<ProgressLog> log;
    return ProgressLog::Open(FileSystem::Default(), path_, &log);
  }

  test::ScratchDir dir_{"gc_progress"};
  const std::string path_ = dir_.Join("GC_PROGRESS-t");
};

TEST_F(ProgressLogTest, WhatIsWrittenReadsBack) {
  {
    auto log = Open();
    EXPECT_EQ(log->progress(), RoundProgress());
    ASSERT_OK(log->StartRound(10));
    ASSERT_OK(log->RangeDone({"acc", "", "m"}));
    ASSERT_OK(log->RangeDone({"acc", "m", ""}));
  }
  {
    auto log = Open();
    EXPECT_EQ(log->progress(),
              (RoundProgress{0, 10, {{"acc", "", "m"}, {"acc", "m", ""}}}));
    ASSERT_OK(log->RangeDone({"idx", "", ""}));
    ASSERT_OK(log->FinishRound());
    EXPECT_EQ(log->progress(), (RoundProgress{10, 0, {}}));
  }
  {
    auto log = Open();
    EXPECT_EQ(log->progress(), (RoundProgress{10, 0, {}}));
    // A new round forgets the old one's ranges and keeps what is collected.
    ASSERT_OK(log->StartRound(20));
    ASSERT_OK(log->RangeDone({"acc", "a", "b"}));
    ASSERT_OK(log->StartRound(30));
    EXPECT_EQ(log->progress(), (RoundProgress{10, 30, {}}));
  }
  EXPECT_EQ(Open()->progress(), (RoundProgress{10, 30, {}}));
}

// A crash can cut the file anywhere after its first record: every cut reads
// as a prefix of the ranges, and the opening collector's rewrite drops the
// torn tail so that what it appends next reads back.
TEST_F(ProgressLogTest, ATornAppendIsDroppedAtEveryCut) {
  std::string whole;
  size_t first_size = 0;
  {
    auto log = Open();
    ASSERT_OK(log->StartRound(7));
    first_size = Contents().size();
    ASSERT_OK(log->RangeDone({"acc", "", "k"}));
    ASSERT_OK(log->RangeDone({"acc", "k", ""}));
    ASSERT_OK(log->FinishRound());
    whole = Contents();
  }
  std::vector<size_t> ends;  // where each record after the first ends
  {
    RoundProgress p;
    bool torn = false;
    for (size_t cut = first_size; cut <= whole.size(); cut++) {
      ASSERT_OK(ProgressLog::Decode(Slice(whole.data(), cut), "f", &p, &torn)) << cut;
      if (!torn) ends.push_back(cut);
    }
  }
  ASSERT_EQ(ends.size(), 4u);  // start, two ranges, finish
  ASSERT_EQ(ends.back(), whole.size());
  for (size_t cut = first_size; cut <= whole.size(); cut++) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    Overwrite(whole.substr(0, cut));
    auto log = Open();
    const size_t whole_records = std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin();
    const RoundProgress& p = log->progress();
    if (whole_records == 4) {
      EXPECT_EQ(p, (RoundProgress{7, 0, {}}));
      continue;
    }
    EXPECT_EQ(p.round, 7u);
    EXPECT_EQ(p.done.size(), whole_records - 1);
    ASSERT_OK(log->RangeDone({"idx", "", ""}));
    log.reset();
    EXPECT_EQ(Open()->progress().done.back(), (RowRange{"idx", "", ""}));
  }
}

TEST_F(ProgressLogTest, DamageACrashCannotCauseIsAnError) {
  {
    auto log = Open();
    ASSERT_OK(log->StartRound(7));
    ASSERT_OK(log->RangeDone({"acc", "", ""}));
  }
  const std::string good = Contents();
  std::string bad = good;
  bad[12] ^= 1;  // in the first record's payload
  Overwrite(bad);
  Status s = OpenStatus();
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("GC_PROGRESS-t"), std::string::npos) << s.ToString();
  EXPECT_EQ(Contents(), bad) << "nothing is rewritten over a damaged file";

  Overwrite("");
  EXPECT_TRUE(OpenStatus().IsCorruption());

  // Two start records: the second is out of place.
  Overwrite(good.substr(0, 27) + good.substr(0, 27));
  s = OpenStatus();
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("offset 27"), std::string::npos) << s.ToString();
}

// The bytes of the worked example in gc/FORMAT.md.
TEST_F(ProgressLogTest, WorkedExampleOfTheFormatDoc) {
  {
    auto log = Open();
    ASSERT_OK(log->StartRound(0x0640000000000001));
    ASSERT_OK(log->FinishRound());
    ASSERT_OK(log->StartRound(0x0640000000000005));
    ASSERT_OK(log->RangeDone({"acc", "", "m"}));
  }
  EXPECT_EQ(HexBytes(Contents()),
            "566feede" "12000000" "01" "0100" "0100000000004006" "0500000000004006"
            "d40b65b8" "07000000" "02" "03616363" "00" "016d");
}

// A newer format's record, and another version of the start record, are
// NotSupported.
TEST_F(ProgressLogTest, UnknownVersionsAreNotSupported) {
  {
    auto log = Open();
    ASSERT_OK(log->StartRound(7));
  }
  std::string c = Contents();
  // The start record with version 2, checksummed again.
  c[9] = 2;
  std::string body = c.substr(4);
  const uint32_t ck = Checksum32(body.data(), body.size(), 0x53544750);
  EncodeFixed32(c.data(), ck);
  Overwrite(c);
  Status s = OpenStatus();
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
}

// A log that claims more than the stored safepoint (its file was replaced)
// comes down to it, and stays readable after later rounds.
TEST_F(ProgressLogTest, ClampForgetsWhatLiesAboveASafepoint) {
  {
    auto log = Open();
    ASSERT_OK(log->StartRound(100));
    ASSERT_OK(log->FinishRound());
    ASSERT_OK(log->StartRound(120));
    ASSERT_OK(log->RangeDone({"acc", "", ""}));
    ASSERT_OK(log->Clamp(50));
    EXPECT_EQ(log->progress(), (RoundProgress{50, 0, {}}));
    ASSERT_OK(log->StartRound(60));
    ASSERT_OK(log->FinishRound());
  }
  EXPECT_EQ(Open()->progress(), (RoundProgress{60, 0, {}}));
}

TEST(SubtractRangesTest, LeavesWhatNoFinishedRangeCovers) {
  using V = std::vector<RowRange>;
  // Nothing done: everything is left.
  EXPECT_EQ(SubtractRanges({{"t", "", ""}}, {}), (V{{"t", "", ""}}));
  // The same ranges: nothing is left.
  EXPECT_EQ(SubtractRanges({{"t", "", "m"}, {"t", "m", ""}}, {{"t", "m", ""}, {"t", "", "m"}}),
            V{});
  // Another table's ranges do not count.
  EXPECT_EQ(SubtractRanges({{"t", "", "m"}}, {{"u", "", ""}}), (V{{"t", "", "m"}}));
  // The table split since: the finished half of a tablet is left out.
  EXPECT_EQ(SubtractRanges({{"t", "", "f"}, {"t", "f", "m"}, {"t", "m", ""}},
                           {{"t", "", "h"}}),
            (V{{"t", "h", "m"}, {"t", "m", ""}}));
  // Holes between finished ranges, and up to the end.
  EXPECT_EQ(SubtractRanges({{"t", "", ""}}, {{"t", "b", "c"}, {"t", "e", "f"}}),
            (V{{"t", "", "b"}, {"t", "c", "e"}, {"t", "f", ""}}));
  // Overlapping finished ranges; one reaching past the end.
  EXPECT_EQ(SubtractRanges({{"t", "a", "z"}}, {{"t", "c", "g"}, {"t", "e", "k"}, {"t", "x", ""}}),
            (V{{"t", "a", "c"}, {"t", "k", "x"}}));
  // A finished range starting past the task's end leaves it whole.
  EXPECT_EQ(SubtractRanges({{"t", "a", "c"}}, {{"t", "d", "e"}}), (V{{"t", "a", "c"}}));
}

}  // namespace
}  // namespace strata::gc
