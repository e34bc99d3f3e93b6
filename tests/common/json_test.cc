#include "common/json.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "util/status_matchers.h"

namespace strata {
namespace {

TEST(JsonTest, ParsesEtcdReplies) {
  Result<Json> j = Json::Parse(
      R"({"header":{"revision":"3","raft_term":"2"},"kvs":[{"key":"Zm9v","version":"2"}],)"
      R"("count":"1","more":false,"n":-12.5e+3,"z":null,"t":true})");
  ASSERT_OK(j);
  ASSERT_TRUE(j->is_object());
  EXPECT_EQ(*Int64Member(*j->Find("header"), "revision"), 3);
  EXPECT_EQ(*Int64Member(*j, "count"), 1);
  EXPECT_EQ(*Int64Member(*j, "absent", 7), 7);
  ASSERT_EQ(j->Find("kvs")->elements().size(), 1u);
  EXPECT_EQ(j->Find("kvs")->elements()[0].Find("key")->text(), "Zm9v");
  EXPECT_FALSE(j->Find("more")->boolean());
  EXPECT_TRUE(j->Find("t")->boolean());
  EXPECT_EQ(j->Find("n")->type(), Json::Type::kNumber);
  EXPECT_EQ(j->Find("n")->text(), "-12.5e+3");
  EXPECT_EQ(j->Find("z")->type(), Json::Type::kNull);
  EXPECT_EQ(j->Find("missing"), nullptr);
  EXPECT_FALSE(j->Find("n")->ToInt64().ok());  // not an integer
}

TEST(JsonTest, DecodesEscapesAndSurrogates) {
  Result<Json> j = Json::Parse(R"(["a\"b\\c\/\b\f\n\r\t", "\u00e9\u20ac\ud83d\ude00", "\u0000"])");
  ASSERT_OK(j);
  EXPECT_EQ(j->elements()[0].text(), "a\"b\\c/\b\f\n\r\t");
  EXPECT_EQ(j->elements()[1].text(), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(j->elements()[2].text(), std::string(1, '\0'));
}

TEST(JsonTest, QuoteRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  Result<Json> j = Json::Parse(JsonQuote(all));
  ASSERT_OK(j);
  EXPECT_EQ(j->text(), all);
}

TEST(JsonTest, RefusesMalformedText) {
  for (const char* bad :
       {"",          " ",     "{",       "}",           "[1,]",        "{\"a\":}",  "{\"a\" 1}",
        "{a:1}",     "\"abc", "\"\\x\"", "01",          "-",           "1.",        "1e",
        "tru",       "nul",   "[1] x",   "\"\\ud800\"", "\"\\udc00\"", "\"\\u12\"", "\"a\nb\"",
        "{\"a\":1,}"}) {
    Result<Json> j = Json::Parse(bad);
    EXPECT_FALSE(j.ok()) << "'" << bad << "'";
    if (!j.ok()) {
      EXPECT_EQ(j.status().code(), Status::Code::kInvalidArgument) << bad;
      EXPECT_NE(j.status().message().find("offset"), std::string::npos) << bad;
    }
  }
}

TEST(JsonTest, LimitsNesting) {
  std::string deep(Json::kMaxDepth - 1, '[');
  deep += std::string(Json::kMaxDepth - 1, ']');
  EXPECT_OK(Json::Parse(deep));
  std::string too_deep(Json::kMaxDepth + 1, '[');
  too_deep += std::string(Json::kMaxDepth + 1, ']');
  Result<Json> j = Json::Parse(too_deep);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("nesting"), std::string::npos);
}

TEST(JsonTest, Int64Range) {
  EXPECT_EQ(*Json::Parse("\"9223372036854775807\"")->ToInt64(), INT64_MAX);
  EXPECT_EQ(*Json::Parse("\"-9223372036854775808\"")->ToInt64(), INT64_MIN);
  EXPECT_FALSE(Json::Parse("\"9223372036854775808\"")->ToInt64().ok());
  EXPECT_FALSE(Json::Parse("\"12a\"")->ToInt64().ok());
  EXPECT_FALSE(Json::Parse("\"\"")->ToInt64().ok());
  EXPECT_FALSE(Json::Parse("true")->ToInt64().ok());
}

TEST(Base64Test, KnownValues) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("\xff\xfe"), "//4=");
  EXPECT_EQ(*Base64Decode("Zm9vYg=="), "foob");
  EXPECT_EQ(*Base64Decode("Zm9vYg"), "foob");   // padding optional
  EXPECT_EQ(*Base64Decode("__4"), "\xff\xfe");  // URL-safe alphabet
}

TEST(Base64Test, RoundTripsEveryLength) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 300; ++n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    Result<std::string> back = Base64Decode(Base64Encode(bytes));
    ASSERT_OK(back);
    EXPECT_EQ(*back, bytes) << n;
  }
}

TEST(Base64Test, RefusesBadText) {
  for (const char* bad : {"Z", "Zm9v!", "Zh==", "Zm9=", "a b="}) {
    EXPECT_FALSE(Base64Decode(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace strata
