#include "strata/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata {
namespace {

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::OK().ok());
}

struct CodeCase {
  Status status;
  Status::Code code;
  const char* name;
  bool (Status::*is)() const;
};

TEST(StatusTest, EveryCode) {
  const std::vector<CodeCase> cases = {
      {Status::NotFound("m"), Status::Code::kNotFound, "NotFound", &Status::IsNotFound},
      {Status::Corruption("m"), Status::Code::kCorruption, "Corruption", &Status::IsCorruption},
      {Status::NotSupported("m"), Status::Code::kNotSupported, "NotSupported",
       &Status::IsNotSupported},
      {Status::InvalidArgument("m"), Status::Code::kInvalidArgument, "InvalidArgument",
       &Status::IsInvalidArgument},
      {Status::IOError("m"), Status::Code::kIOError, "IOError", &Status::IsIOError},
      {Status::Busy("m"), Status::Code::kBusy, "Busy", &Status::IsBusy},
      {Status::Aborted("m"), Status::Code::kAborted, "Aborted", &Status::IsAborted},
      {Status::AlreadyExists("m"), Status::Code::kAlreadyExists, "AlreadyExists",
       &Status::IsAlreadyExists},
      {Status::ResourceExhausted("m"), Status::Code::kResourceExhausted, "ResourceExhausted",
       &Status::IsResourceExhausted},
      {Status::FailedPrecondition("m"), Status::Code::kFailedPrecondition, "FailedPrecondition",
       &Status::IsFailedPrecondition},
      {Status::TimedOut("m"), Status::Code::kTimedOut, "TimedOut", &Status::IsTimedOut},
  };
  for (const CodeCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
    EXPECT_STREQ(StatusCodeName(c.code), c.name);
    // Exactly one predicate holds.
    for (const CodeCase& other : cases) {
      EXPECT_EQ((c.status.*other.is)(), other.code == c.code) << other.name;
    }
  }
  EXPECT_STREQ(StatusCodeName(Status::Code::kOk), "OK");
}

TEST(StatusTest, CodeValuesAreFrozen) {
  EXPECT_EQ(static_cast<int>(Status::Code::kOk), 0);
  EXPECT_EQ(static_cast<int>(Status::Code::kNotFound), 1);
  EXPECT_EQ(static_cast<int>(Status::Code::kCorruption), 2);
  EXPECT_EQ(static_cast<int>(Status::Code::kIOError), 5);
  EXPECT_EQ(static_cast<int>(Status::Code::kTimedOut), 11);
}

TEST(StatusTest, EmptyMessage) {
  Status s = Status::Busy("");
  EXPECT_TRUE(s.IsBusy());
  EXPECT_EQ(s.ToString(), "Busy");
}

TEST(StatusTest, CopyAndMove) {
  Status a = Status::Corruption("block 7 at offset 4096");
  Status b = a;
  EXPECT_TRUE(b.IsCorruption());
  EXPECT_EQ(b.message(), "block 7 at offset 4096");
  EXPECT_EQ(a.message(), b.message());  // a unchanged
  Status c;
  c = a;
  EXPECT_EQ(c.ToString(), a.ToString());
  c = Status::OK();
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(a.IsCorruption());
  Status d = std::move(a);
  EXPECT_TRUE(d.IsCorruption());
  Status e;
  e = std::move(d);
  EXPECT_EQ(e.message(), "block 7 at offset 4096");
  Status& self = e;
  e = self;  // self-assignment keeps the value
  EXPECT_EQ(e.message(), "block 7 at offset 4096");
}

TEST(StatusTest, WithContext) {
  Status s = Status::IOError("disk full").WithContext("writing /x/000001.log");
  EXPECT_TRUE(s.IsIOError());
  EXPECT_EQ(s.message(), "writing /x/000001.log: disk full");
  EXPECT_TRUE(Status::OK().WithContext("anything").ok());
}

Status FailIf(bool fail, int* reached) {
  STRATA_RETURN_IF_ERROR(fail ? Status::Aborted("stop") : Status::OK());
  (*reached)++;
  return Status::OK();
}

TEST(StatusTest, ReturnIfError) {
  int reached = 0;
  EXPECT_TRUE(FailIf(false, &reached).ok());
  EXPECT_EQ(reached, 1);
  Status s = FailIf(true, &reached);
  EXPECT_TRUE(s.IsAborted());
  EXPECT_EQ(s.message(), "stop");
  EXPECT_EQ(reached, 1);
}

Result<int> Half(int v) {
  if (v % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

TEST(ResultTest, ValueAndError) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.value(), 4);
  EXPECT_EQ(*r, 4);
  *r = 5;
  EXPECT_EQ(r.value(), 5);

  Result<int> e = Half(3);
  EXPECT_FALSE(e.ok());
  EXPECT_TRUE(e.status().IsInvalidArgument());
  EXPECT_EQ(e.status().message(), "odd: 3");
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<std::string>> r = std::make_unique<std::string>("hello");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->get()->size(), 5u);
  std::unique_ptr<std::string> p = std::move(r).value();
  EXPECT_EQ(*p, "hello");
}

TEST(ResultTest, StatusCanBeMovedOut) {
  Result<std::string> r = Status::NotFound("key k");
  Status s = std::move(r).status();
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_EQ(s.message(), "key k");
}

}  // namespace
}  // namespace strata
