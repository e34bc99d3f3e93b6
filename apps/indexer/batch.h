// The index the pipeline maintains, computed from scratch over a whole
// corpus (the MapReduce way): the check the incremental pipeline must equal
// after quiescence, and the time it must beat. The rules, which both follow:
//   - clusters: pages with equal fingerprints (html.h); a cluster's
//     canonical page is its shortest URL, the bytewise smallest among equals;
//   - link inversion: the out-links of canonical pages only (a duplicate
//     says what its canonical says), each to a page of the corpus, attached
//     to the canonical of the target's cluster; a link from a cluster to
//     itself counts for nothing. Per canonical target: the source
//     canonicals linking to it, each with the anchor texts of its links;
//   - the inverted index: each term of a canonical page's title, text and
//     incoming anchor texts maps to that canonical URL, with how often it
//     occurs in each of the three (what a search ranks by).
//
// Pure functions; thread-safe.
#ifndef STRATA_APPS_INDEXER_BATCH_H_
#define STRATA_APPS_INDEXER_BATCH_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "indexer/corpus.h"

namespace strata::indexer {

// How often a term occurs in a canonical page's title, text and incoming
// anchor texts (all anchors of all source canonicals).
struct Posting {
  uint32_t title = 0;
  uint32_t text = 0;
  uint32_t anchors = 0;
  friend bool operator==(const Posting&, const Posting&) = default;
};

// The terms of a canonical page and their postings, from its title, its
// text and the anchor texts pointing to it.
std::map<std::string, Posting> PostingsOf(std::string_view title, std::string_view text,
                                          const std::vector<std::string_view>& anchors);

struct Index {
  // URL -> the canonical URL of its cluster (itself for a canonical).
  std::map<std::string, std::string> canonical;
  // Fingerprint -> the URLs of the cluster.
  std::map<uint64_t, std::set<std::string>> clusters;
  // Canonical target -> source canonical -> its anchor texts, sorted.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> inlinks;
  // Term -> the canonical URLs it is found in, each with its posting.
  std::map<std::string, std::map<std::string, Posting>> postings;
  // URL -> what its parse found off (ParsedPage::problems), for pages with
  // any: the bad-input report.
  std::map<std::string, std::vector<std::string>> problems;
  friend bool operator==(const Index&, const Index&) = default;
};

// The canonical among `urls` by the rule above. REQUIRES: !urls.empty().
std::string CanonicalOf(const std::set<std::string>& urls);

// The index of `pages` (URLs distinct; a later page with a URL already seen
// replaces it).
Index BuildIndex(const std::vector<Page>& pages);

}  // namespace strata::indexer

#endif  // STRATA_APPS_INDEXER_BATCH_H_
