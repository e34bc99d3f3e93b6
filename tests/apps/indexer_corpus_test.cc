// The indexing pipeline's corpora: a synthetic corpus is deterministic, its
// copies are duplicates (equal fingerprints) that link where their sources
// do, its edits change pages; a directory tree loads as pages whose
// relative links resolve to each other.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "indexer/corpus.h"
#include "indexer/html.h"
#include "util/test_util.h"

namespace strata::indexer {
namespace {

TEST(IndexerCorpusTest, SyntheticPagesAreDeterministicWithDuplicates) {
  SyntheticCorpus corpus({.pages = 500, .seed = 7});
  SyntheticCorpus again({.pages = 500, .seed = 7});
  size_t copies = 0;
  std::set<std::string> urls;
  for (uint64_t i = 0; i < corpus.size(); i++) {
    const Page p = corpus.PageAt(i);
    EXPECT_EQ(p.html, again.PageAt(i).html);
    urls.insert(p.url);
    const ParsedPage parsed = ParseHtml(p.url, p.html);
    EXPECT_TRUE(parsed.problems.empty()) << i;
    EXPECT_FALSE(parsed.links.empty() && p.url != corpus.Url(i)) << i;
    for (const Link& l : parsed.links) EXPECT_EQ(l.url.rfind("http://synthetic.example/p/", 0), 0u);
    if (i > 0 && parsed.fingerprint == ParseHtml("", corpus.PageAt(i - 1).html).fingerprint) {
      copies++;
    }
  }
  EXPECT_EQ(urls.size(), 500u);
  EXPECT_GT(copies, 20u);   // about one in ten
  EXPECT_LT(copies, 100u);
  // Edits change pages, and are deterministic too.
  size_t changed = 0;
  for (uint64_t i = 0; i < 100; i++) {
    if (corpus.PageAt(i, 1).html != corpus.PageAt(i).html) changed++;
    EXPECT_EQ(corpus.PageAt(i, 3).html, again.PageAt(i, 3).html);
  }
  EXPECT_GT(changed, 80u);
}

TEST(IndexerCorpusTest, LoadsAnHtmlTree) {
  test::ScratchDir dir("indexer_corpus");
  std::filesystem::create_directories(dir.Join("lib"));
  std::ofstream(dir.Join("index.html")) << "<a href=\"lib/os.html\">os</a>";
  std::ofstream(dir.Join("lib/os.html")) << "<a href=\"../index.html\">up</a>";
  std::ofstream(dir.Join("notes.txt")) << "not a page";
  // A symlinked page is a copy at its own URL.
  std::filesystem::create_symlink("index.html", dir.Join("home.html"));
  std::vector<std::string> skipped;
  const std::vector<Page> pages = LoadHtmlTree(dir.path(), "http://docs.local/", &skipped);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(pages[0].url, "http://docs.local/home.html");
  EXPECT_EQ(pages[0].html, "<a href=\"lib/os.html\">os</a>");
  EXPECT_EQ(pages[1].url, "http://docs.local/index.html");
  EXPECT_EQ(pages[2].url, "http://docs.local/lib/os.html");
  EXPECT_EQ(ParseHtml(pages[1].url, pages[1].html).links[0].url, pages[2].url);
  EXPECT_EQ(ParseHtml(pages[2].url, pages[2].html).links[0].url, pages[1].url);
}

}  // namespace
}  // namespace strata::indexer
