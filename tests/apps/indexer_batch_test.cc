// The batch index: clusters and canonicals by the stated rule, link
// inversion from canonical pages onto the canonicals of their targets,
// postings of title, text and incoming anchors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "indexer/batch.h"
#include "indexer/corpus.h"

namespace strata::indexer {
namespace {

TEST(IndexerBatchTest, ClustersLinksAndPostings) {
  const std::string x = "<title>Alpha page</title><p>first words</p>";
  const std::vector<Page> pages = {
      {"http://h/a.html", x + "<a href=b.html>bee</a><a href=c.html>sea</a>"},
      // A copy of a (same title and text, anchors included) under a longer
      // URL; its links, to other pages here, do not count.
      {"http://h/copy/a.html", x + "<a href=b.html>bee</a><a href=c.html>sea</a>"},
      {"http://h/b.html", "<title>Bravo</title><p>second</p><a href=copy/a.html>alpha link</a>"},
      {"http://h/c.html",
       "<title>Charlie</title><a href=c.html>me</a><a href=b.html>bee two</a>"
       "<a href=nowhere.html>gone</a>"},
  };
  const Index index = BuildIndex(pages);
  EXPECT_EQ(index.canonical.at("http://h/copy/a.html"), "http://h/a.html");
  EXPECT_EQ(index.canonical.at("http://h/b.html"), "http://h/b.html");
  EXPECT_EQ(index.clusters.size(), 3u);
  using Sources = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(index.inlinks.at("http://h/a.html"), (Sources{{"http://h/b.html", {"alpha link"}}}));
  EXPECT_EQ(index.inlinks.at("http://h/b.html"),
            (Sources{{"http://h/a.html", {"bee"}}, {"http://h/c.html", {"bee two"}}}));
  EXPECT_EQ(index.inlinks.at("http://h/c.html"), (Sources{{"http://h/a.html", {"sea"}}}));
  EXPECT_EQ(index.inlinks.size(), 3u);
  // Terms of the title, the text (anchors included: they are text of the
  // page they are on) and the anchors pointing in; only canonical pages.
  using Postings = std::map<std::string, Posting>;
  EXPECT_EQ(index.postings.at("alpha"), (Postings{{"http://h/a.html", {.title = 1, .anchors = 1}},
                                                  {"http://h/b.html", {.text = 1}}}));
  EXPECT_EQ(index.postings.at("bee"), (Postings{{"http://h/a.html", {.text = 1}},
                                                {"http://h/b.html", {.text = 0, .anchors = 2}},
                                                {"http://h/c.html", {.text = 1}}}));
  // "link" is on b only, and reaches a through b's anchor.
  EXPECT_EQ(index.postings.at("link"),
            (Postings{{"http://h/a.html", {.anchors = 1}}, {"http://h/b.html", {.text = 1}}}));
  EXPECT_EQ(index.postings.at("gone"), (Postings{{"http://h/c.html", {.text = 1}}}));
  EXPECT_EQ(index.postings.at("sea"),
            (Postings{{"http://h/a.html", {.text = 1}}, {"http://h/c.html", {.anchors = 1}}}));
}

TEST(IndexerBatchTest, TheCanonicalIsTheShortestThenSmallestUrl) {
  EXPECT_EQ(CanonicalOf({"http://h/bb", "http://h/a", "http://h/ccc"}), "http://h/a");
  EXPECT_EQ(CanonicalOf({"http://h/b", "http://h/a"}), "http://h/a");
}

TEST(IndexerBatchTest, ASyntheticCorpusIndexesDeterministically) {
  SyntheticCorpus corpus({.pages = 300, .seed = 3});
  std::vector<Page> pages;
  for (uint64_t i = 0; i < corpus.size(); i++) pages.push_back(corpus.PageAt(i));
  const Index a = BuildIndex(pages);
  std::reverse(pages.begin(), pages.end());
  EXPECT_EQ(BuildIndex(pages), a);  // order does not matter
  EXPECT_LT(a.clusters.size(), 300u);  // duplicates cluster
  EXPECT_GT(a.inlinks.size(), 100u);
  EXPECT_GT(a.postings.size(), 100u);
}

}  // namespace
}  // namespace strata::indexer
