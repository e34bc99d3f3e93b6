// The document side of the indexing pipeline: what a page says. ParseHtml
// reads an HTML page the way the pipeline's parse step needs it (title,
// visible text, links with their anchor text, a fingerprint of the text for
// duplicate clustering) and never fails: broken markup yields whatever text
// and links could be read, and `problems` says what was off. Uses nothing of
// Strata; the pipeline (and its batch baseline) call it alike, so both see
// the same parse.
//
// Pure functions; thread-safe.
#ifndef STRATA_APPS_INDEXER_HTML_H_
#define STRATA_APPS_INDEXER_HTML_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::indexer {

struct Link {
  std::string url;     // absolute, without its #fragment
  std::string anchor;  // the link's visible text, whitespace collapsed
  friend bool operator==(const Link&, const Link&) = default;
};

struct ParsedPage {
  std::string title;  // <title>, whitespace collapsed; empty when none
  // The visible text: tags, comments, <script> and <style> removed,
  // character references decoded, whitespace collapsed to single spaces.
  std::string text;
  std::vector<Link> links;  // <a href> in document order; links to itself dropped
  // Of the title and text: pages with equal fingerprints are duplicates.
  uint64_t fingerprint = 0;
  // What was off, for the report: an unclosed tag or comment, a text cut
  // at the size limit, a link that could not be resolved. Each is one line
  // (control bytes shown as '?'). Empty when none.
  std::vector<std::string> problems;
};

// The most of a page that is parsed; the rest is cut, with a problem noted.
inline constexpr size_t kMaxParsedBytes = 4 << 20;

ParsedPage ParseHtml(std::string_view url, std::string_view html);

// `href` resolved against the page at `base` (both URLs of the form
// scheme://host/path or paths from the root), its fragment removed, "." and
// ".." segments folded. Empty when `href` cannot be used as a link
// (javascript:, mailto:, empty, or bytes a URL may not hold).
std::string ResolveUrl(std::string_view base, std::string_view href);

// Whether `url` is one the pipeline accepts as a page's key: 1 to 2048
// printable ASCII bytes without spaces.
bool ValidUrl(std::string_view url);

// The terms of a text: maximal runs of ASCII letters and digits (other
// bytes, UTF-8 ones included, separate them), lowercased, 2 to 40 bytes.
std::vector<std::string> Terms(std::string_view text);

// FNV-1a, 64 bits: stable across runs and machines (a fingerprint is stored).
uint64_t Fingerprint(std::string_view bytes);

}  // namespace strata::indexer

#endif  // STRATA_APPS_INDEXER_HTML_H_
