// The indexing pipeline's parser: titles, visible text, links and their
// anchors resolved against the page, fingerprints of duplicates, terms; and
// broken input (unclosed tags and comments, huge pages, bad links) parsed
// as far as it goes, with the problems named.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "indexer/html.h"
#include "util/test_util.h"

namespace strata::indexer {
namespace {

TEST(IndexerHtmlTest, TitleTextAndLinks) {
  const ParsedPage p = ParseHtml(
      "http://docs.example/lib/os.html",
      "<!DOCTYPE html><html><head><title> The  os\nmodule </title>"
      "<style>p { color: red }</style><script>var a = '<a href=x>';</script></head>"
      "<body><h1>os &mdash; Miscellaneous</h1><!-- a comment <a href=y> -->"
      "<p>See <a href=\"path.html#top\">os.path</a> and <A HREF='../index.html'>the"
      "\n index</a>, <a href=\"#here\">here</a>, <a href='mailto:x@y'>mail</a> and "
      "<a href=\"http://other.example/a/./b/../c.html?q=1\">elsewhere</a>.</p>"
      "<p>Fish &amp; chips &#x41;&#66; &unknown; x < y</p></body></html>");
  EXPECT_EQ(p.title, "The os module");
  EXPECT_EQ(p.text,
            "os \u2014 Miscellaneous See os.path and the index , here , mail and elsewhere . Fish "
            "& chips AB &unknown; x < y");
  EXPECT_EQ(p.links, (std::vector<Link>{{"http://docs.example/lib/path.html", "os.path"},
                                        {"http://docs.example/index.html", "the index"},
                                        {"http://other.example/a/c.html?q=1", "elsewhere"}}));
  EXPECT_TRUE(p.problems.empty());
}

TEST(IndexerHtmlTest, DuplicatesShareAFingerprint) {
  const std::string body = "<title>T</title><p>Same text, <b>same</b> words.</p>";
  const ParsedPage a = ParseHtml("http://x/a.html", body);
  const ParsedPage b = ParseHtml("http://x/copy/b.html", "<!-- mirror -->" + body + "\n");
  const ParsedPage c = ParseHtml("http://x/c.html", "<title>T</title><p>Other words.</p>");
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_NE(a.fingerprint, c.fingerprint);
}

TEST(IndexerHtmlTest, BrokenInputIsParsedAsFarAsItGoes) {
  ParsedPage p = ParseHtml("http://x/a.html", "<p>before <a href=\"b.html\">b</a> <div class=\"x");
  EXPECT_EQ(p.text, "before b");
  EXPECT_EQ(p.links.size(), 1u);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("unclosed tag"), std::string::npos);

  p = ParseHtml("http://x/a.html", "text <!-- never closed <a href=b.html>b</a>");
  EXPECT_EQ(p.text, "text");
  EXPECT_TRUE(p.links.empty());
  ASSERT_EQ(p.problems.size(), 1u);

  p = ParseHtml("http://x/a.html", "<script>for (;;) {}");
  EXPECT_EQ(p.text, "");
  ASSERT_EQ(p.problems.size(), 1u);

  // A link to itself (a loop) is dropped; one with bytes no URL holds is
  // reported, not followed.
  p = ParseHtml("http://x/a.html", "<a href=\"a.html\">me</a><a href=\"b c.html\">bad</a>");
  EXPECT_TRUE(p.links.empty());
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("b c.html"), std::string::npos);

  // Several MB: cut at the limit, the rest noted.
  std::string big = "<p>";
  while (big.size() < kMaxParsedBytes + 1000) big += "word ";
  p = ParseHtml("http://x/big.html", big);
  EXPECT_LE(p.text.size(), kMaxParsedBytes);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("cut at"), std::string::npos);

  // Bytes that are not ASCII pass through the text untouched.
  p = ParseHtml("http://x/a.html", "<p>caf\xc3\xa9 \xff\xfe</p>");
  EXPECT_EQ(p.text, "caf\xc3\xa9 \xff\xfe");
}

TEST(IndexerHtmlTest, ResolvesUrls) {
  const std::string base = "http://h.example/a/b/c.html?x=1";
  EXPECT_EQ(ResolveUrl(base, "d.html"), "http://h.example/a/b/d.html");
  EXPECT_EQ(ResolveUrl(base, "../d.html"), "http://h.example/a/d.html");
  EXPECT_EQ(ResolveUrl(base, "../../../../d.html"), "http://h.example/d.html");
  EXPECT_EQ(ResolveUrl(base, "/r/./s/"), "http://h.example/r/s/");
  EXPECT_EQ(ResolveUrl(base, "//o.example/p"), "http://o.example/p");
  EXPECT_EQ(ResolveUrl(base, "HTTPS://O.example"), "HTTPS://O.example/");
  EXPECT_EQ(ResolveUrl(base, "  e.html#frag "), "http://h.example/a/b/e.html");
  EXPECT_EQ(ResolveUrl(base, "#frag"), "");
  EXPECT_EQ(ResolveUrl(base, "javascript:void(0)"), "");
  EXPECT_EQ(ResolveUrl(base, "ftp://h/x"), "");
  EXPECT_EQ(ResolveUrl(base, "a b"), "");
  EXPECT_EQ(ResolveUrl("/docs/x/y.html", "z.html"), "/docs/x/z.html");
  EXPECT_TRUE(ValidUrl("http://h/x"));
  EXPECT_FALSE(ValidUrl(""));
  EXPECT_FALSE(ValidUrl("http://h/\x01"));
  EXPECT_FALSE(ValidUrl(std::string(3000, 'a')));
}

// Random pieces of markup, quotes, references and bytes: parsing never
// fails, and what it gives holds its invariants.
TEST(IndexerHtmlTest, RandomInputParses) {
  static const char* kPieces[] = {"<a href=\"", "\">", "</a>", "<title>", "</title>", "<!--",
                                  "-->", "<script>", "</script>", "&amp;", "&#x", "&#", ";",
                                  "'", "\"", "<", ">", "/", "../", "#", " ", "\n", "word",
                                  "http://h/x", "\xff", "\x00", "<p", "=", "&"};
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 3000; n++) {
    std::string html;
    const int pieces = static_cast<int>(rng() % 40);
    for (int i = 0; i < pieces; i++) {
      html += std::string(kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))]);
    }
    const ParsedPage p = ParseHtml("http://h/dir/page.html", html);
    EXPECT_EQ(p.fingerprint, Fingerprint(p.title + "\n" + p.text));
    for (const Link& l : p.links) {
      EXPECT_TRUE(ValidUrl(l.url)) << html;
      EXPECT_EQ(l.url.find('#'), std::string::npos) << html;
    }
    EXPECT_EQ(p.text.find("  "), std::string::npos) << html;
  }
}

TEST(IndexerHtmlTest, Terms) {
  EXPECT_EQ(Terms("The os.path module, x, caf\xc3\xa9 2024 a1B2"),
            (std::vector<std::string>{"the", "os", "path", "module", "caf", "2024", "a1b2"}));
  EXPECT_TRUE(Terms(std::string(50, 'x')).empty());
}

}  // namespace
}  // namespace strata::indexer
