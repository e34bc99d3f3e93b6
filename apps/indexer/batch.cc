#include "indexer/batch.h"

#include <algorithm>

#include "indexer/html.h"

namespace strata::indexer {

std::string CanonicalOf(const std::set<std::string>& urls) {
  return *std::min_element(urls.begin(), urls.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
}

Index BuildIndex(const std::vector<Page>& pages) {
  std::map<std::string, ParsedPage> parsed;
  for (const Page& p : pages) parsed[p.url] = ParseHtml(p.url, p.html);
  Index index;
  for (const auto& [url, page] : parsed) index.clusters[page.fingerprint].insert(url);
  for (const auto& [fp, urls] : index.clusters) {
    const std::string canonical = CanonicalOf(urls);
    for (const std::string& u : urls) index.canonical[u] = canonical;
  }
  for (const auto& [url, page] : parsed) {
    if (index.canonical.at(url) != url) continue;
    for (const Link& l : page.links) {
      auto target = index.canonical.find(l.url);
      if (target == index.canonical.end() || target->second == url) continue;
      index.inlinks[target->second][url].push_back(l.anchor);
    }
  }
  for (auto& [target, sources] : index.inlinks) {
    for (auto& [source, anchors] : sources) std::sort(anchors.begin(), anchors.end());
  }
  for (const auto& [url, page] : parsed) {
    if (index.canonical.at(url) != url) continue;
    for (const std::string& t : Terms(page.title + " " + page.text)) index.postings[t].insert(url);
    auto in = index.inlinks.find(url);
    if (in == index.inlinks.end()) continue;
    for (const auto& [source, anchors] : in->second) {
      for (const std::string& a : anchors) {
        for (const std::string& t : Terms(a)) index.postings[t].insert(url);
      }
    }
  }
  return index;
}

}  // namespace strata::indexer
