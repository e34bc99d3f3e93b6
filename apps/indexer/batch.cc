#include "indexer/batch.h"

#include <algorithm>

#include "indexer/html.h"

namespace strata::indexer {

std::string CanonicalOf(const std::set<std::string>& urls) {
  return *std::min_element(urls.begin(), urls.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
}

std::map<std::string, Posting> PostingsOf(std::string_view title, std::string_view text,
                                          const std::vector<std::string_view>& anchors) {
  std::map<std::string, Posting> out;
  for (std::string& t : Terms(title)) out[std::move(t)].title++;
  for (std::string& t : Terms(text)) out[std::move(t)].text++;
  for (std::string_view a : anchors) {
    for (std::string& t : Terms(a)) out[std::move(t)].anchors++;
  }
  return out;
}

Index BuildIndex(const std::vector<Page>& pages) {
  std::map<std::string, ParsedPage> parsed;
  for (const Page& p : pages) parsed[p.url] = ParseHtml(p.url, p.html);
  Index index;
  for (const auto& [url, page] : parsed) {
    index.clusters[page.fingerprint].insert(url);
    if (!page.problems.empty()) index.problems[url] = page.problems;
  }
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
    std::vector<std::string_view> anchors;
    auto in = index.inlinks.find(url);
    if (in != index.inlinks.end()) {
      for (const auto& [source, texts] : in->second)
        anchors.insert(anchors.end(), texts.begin(), texts.end());
    }
    for (auto& [term, posting] : PostingsOf(page.title, page.text, anchors)) {
      index.postings[term][url] = posting;
    }
  }
  return index;
}

}  // namespace strata::indexer
