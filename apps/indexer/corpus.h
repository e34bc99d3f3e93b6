// Corpora for the indexing pipeline: HTML pages from a directory (a
// documentation tree), and a deterministic synthetic corpus for scaling
// runs: pages with links among them, clusters of duplicate pages, and
// edits. Uses nothing of Strata.
//
// Thread-safe: a SyntheticCorpus is immutable.
#ifndef STRATA_APPS_INDEXER_CORPUS_H_
#define STRATA_APPS_INDEXER_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace strata::indexer {

struct Page {
  std::string url;
  std::string html;
};

// Every *.html file under `root`, in path order, as pages whose URLs are
// `url_prefix` followed by the file's path under `root` (so relative links
// between them resolve to each other). A symlink to a page is a copy of it
// at the symlink's path; symlinked directories are not followed. Large files are kept whole (the
// parser cuts them); unreadable ones are skipped and named in *skipped.
std::vector<Page> LoadHtmlTree(const std::string& root, const std::string& url_prefix,
                               std::vector<std::string>* skipped);

struct SyntheticOptions {
  uint64_t pages = 1000;
  uint64_t seed = 1;
  // One page in `duplicate_every` is a copy of the page before it (same
  // title and text, another URL): clusters of two, and of more where
  // copies follow each other.
  uint64_t duplicate_every = 10;
  uint32_t links_per_page = 8;
  uint32_t words_per_page = 120;
};

class SyntheticCorpus {
 public:
  explicit SyntheticCorpus(const SyntheticOptions& options) : options_(options) {}

  uint64_t size() const { return options_.pages; }
  std::string Url(uint64_t i) const;
  // Page i as first loaded (version 0), or as edited for the version-th
  // time: an edit rewrites part of the text and some links, and may make
  // the page a copy of another page or no longer one.
  Page PageAt(uint64_t i, uint64_t version = 0) const;

 private:
  const SyntheticOptions options_;
};

}  // namespace strata::indexer

#endif  // STRATA_APPS_INDEXER_CORPUS_H_
