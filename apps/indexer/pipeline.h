// The incremental indexing pipeline: the index of batch.h kept up to date
// by observers as pages are added, edited and deleted, on the public API
// only. Tables (all transactional):
//
//   pages     row = URL: raw (the HTML; observed), title, text, links,
//             linked (the URLs it links to), problems (what its parse
//             found off, when anything), fp (fingerprint), canon (the
//             canonical URL of the page's cluster; observed), and what it
//             contributes now: outs (its anchors per canonical target) and
//             terms (the terms it is posted under)
//   clusters  row = fingerprint: a column "m:<url>" per member, and "v",
//             which every change of the cluster writes so that two changes
//             conflict instead of each computing a canonical from a
//             membership the other changes
//   inlinks   row = canonical target, column = canonical source: its
//             anchor texts, each after a tab, sorted
//   linkers   row = URL, column = a page that links to it
//   postings  row = term, column = a canonical URL posted under it, value
//             its Posting (batch.h) as "title,text,anchors" counts
//
// Observers:
//   parse    (pages/raw, strong)  parses the page, records which pages it
//            links to (linkers), moves it between clusters, recomputes the
//            canonical of each cluster it left or joined (writing canon of
//            every member whose canonical changed) and asks for the page's
//            refresh. A deleted page leaves its cluster and loses its canon.
//   refresh  (pages/canon, strong; pages/refresh, weak)  recomputes what
//            the page contributes: for a canonical page, its anchors onto
//            the canonicals of the pages it links to and its terms (title,
//            text, incoming anchors); nothing for any other page. Changed
//            anchors ask for the target's refresh (its terms include them);
//            a changed canon asks for the refresh of every page linking to
//            this one.
// A refresh is asked for with a weak notification, which conflicts with
// nothing: the many pages linking to a popular page do not abort each
// other. No refresh misses a canonical that moves: the page's linkers entry
// is written by its parse, before any refresh of it reads the canonicals of
// the pages it links to, so the run of a canonical that moves after such a
// read finds the entry and asks for another refresh.

#ifndef STRATA_APPS_INDEXER_PIPELINE_H_
#define STRATA_APPS_INDEXER_PIPELINE_H_

#include <string>
#include <string_view>
#include <vector>

#include "indexer/batch.h"
#include "strata/observer.h"
#include "strata/transaction.h"

namespace strata::indexer {

// The columns a TransactionDB must observe for the pipeline.
std::vector<ObservedColumn> PipelineObservedColumns();

// Creates the pipeline's tables (AlreadyExists is fine: they are kept).
Status CreatePipelineTables(TransactionDB* db);

// The observers to run in an ObserverWorker.
std::vector<ObserverSpec> PipelineObservers();

// Adds or replaces a page, or deletes it, in a transaction of its own
// (tried again while it aborts on an observer's run on the page).
Status PutPage(TransactionDB* db, std::string_view url, std::string_view html);
Status DeletePage(TransactionDB* db, std::string_view url);

// The pages as the store holds them now (pages/raw), in URL order.
Result<std::vector<Page>> ReadPages(TransactionDB* db);

// The index as the tables hold it now (after quiescence: what the observers
// made of the pages).
Result<Index> ReadIndex(TransactionDB* db);

struct SearchHit {
  std::string url;
  size_t matched = 0;  // query terms the page is posted under
  double score = 0;    // the sum of TermWeight * idf over those terms
  size_t inlinks = 0;  // canonical pages linking to it
};

// What one term's posting is worth to a page: 3 f(title) + f(text) +
// 2 f(anchors), f(n) = n / (n + 1.2). The count saturates, as in BM25: the
// tenth occurrence adds less than the first; a term in the title or in the
// anchors of links to the page says more about it than one in its text.
double TermWeight(const Posting& p);

// The canonical pages posted under any term of `query`, best first: more
// terms matched, then the higher score, then the smaller URL. A term's idf
// is ln(1 + 10^6 / pages posted under it), BM25's for a corpus of a million
// pages: a constant size, so that a search reads only its terms' postings.
// At most `limit`.
Result<std::vector<SearchHit>> Search(TransactionDB* db, std::string_view query, size_t limit);

}  // namespace strata::indexer

#endif  // STRATA_APPS_INDEXER_PIPELINE_H_
