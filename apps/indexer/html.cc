#include "html.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace strata::indexer {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool StartsWithNoCase(std::string_view s, size_t at, std::string_view prefix) {
  if (s.size() - at < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); i++) {
    if (Lower(s[at + i]) != prefix[i]) return false;
  }
  return true;
}

// Collapses runs of whitespace to one space and trims both ends.
std::string Collapse(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (char c : s) {
    if (IsSpace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes the character reference at html[*i] ('&'), appending it to *out
// and moving *i past it; a '&' that starts none is itself.
void DecodeReference(std::string_view html, size_t* i, std::string* out) {
  static constexpr std::pair<std::string_view, std::string_view> kNamed[] = {
      {"amp;", "&"}, {"lt;", "<"},   {"gt;", ">"},       {"quot;", "\""},
      {"apos;", "'"}, {"nbsp;", " "}, {"mdash;", "\u2014"}, {"ndash;", "\u2013"},
      {"hellip;", "\u2026"}, {"copy;", "\u00a9"}, {"para;", "\u00b6"}};
  const size_t at = *i + 1;
  if (at < html.size() && html[at] == '#') {
    size_t j = at + 1;
    const bool hex = j < html.size() && (html[j] == 'x' || html[j] == 'X');
    if (hex) j++;
    uint32_t cp = 0;
    size_t digits = 0;
    for (; j < html.size() && digits < 8; j++, digits++) {
      const char c = html[j];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) break;
      cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
    }
    if (digits > 0) {
      if (j < html.size() && html[j] == ';') j++;
      AppendUtf8(out, cp);
      *i = j;
      return;
    }
  } else {
    for (const auto& [name, text] : kNamed) {
      if (html.substr(at, name.size()) == name) {
        out->append(text);
        *i = at + name.size();
        return;
      }
    }
  }
  out->push_back('&');
  *i = at;
}

struct Tag {
  std::string name;  // lowercase
  bool closing = false;
  std::string href;  // for <a>
};

// Parses the tag at html[*i] ('<'); false when it is not closed by '>'.
bool ReadTag(std::string_view html, size_t* i, Tag* tag) {
  size_t j = *i + 1;
  if (j < html.size() && html[j] == '/') {
    tag->closing = true;
    j++;
  }
  while (j < html.size() && std::isalnum(static_cast<unsigned char>(html[j]))) {
    tag->name.push_back(Lower(html[j++]));
  }
  // Attributes, up to the '>' outside quotes.
  while (j < html.size() && html[j] != '>') {
    if (IsSpace(html[j]) || html[j] == '/') {
      j++;
      continue;
    }
    std::string attr;
    while (j < html.size() && !IsSpace(html[j]) && html[j] != '=' && html[j] != '>') {
      attr.push_back(Lower(html[j++]));
    }
    while (j < html.size() && IsSpace(html[j])) j++;
    if (j >= html.size() || html[j] != '=') continue;
    j++;
    while (j < html.size() && IsSpace(html[j])) j++;
    std::string value;
    if (j < html.size() && (html[j] == '"' || html[j] == '\'')) {
      const char quote = html[j++];
      const size_t end = html.find(quote, j);
      if (end == std::string_view::npos) return false;
      value.assign(html.substr(j, end - j));
      j = end + 1;
    } else {
      while (j < html.size() && !IsSpace(html[j]) && html[j] != '>') value.push_back(html[j++]);
    }
    if (attr == "href" && tag->href.empty()) {
      std::string decoded;
      for (size_t k = 0; k < value.size();) {
        if (value[k] == '&') {
          DecodeReference(value, &k, &decoded);
        } else {
          decoded.push_back(value[k++]);
        }
      }
      tag->href = std::move(decoded);
    }
  }
  if (j >= html.size()) return false;
  *i = j + 1;
  return true;
}

// scheme://host of `url` ("" for a path without one), and where its path
// starts.
std::string_view Origin(std::string_view url, size_t* path_at) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || url.find('/') < scheme_end) {
    *path_at = 0;
    return {};
  }
  const size_t slash = url.find('/', scheme_end + 3);
  *path_at = slash == std::string_view::npos ? url.size() : slash;
  return url.substr(0, *path_at);
}

// Folds "." and ".." segments of an absolute path ("/..."), keeping its
// query.
std::string FoldPath(std::string_view path) {
  std::string_view query;
  const size_t q = path.find('?');
  if (q != std::string_view::npos) {
    query = path.substr(q);
    path = path.substr(0, q);
  }
  std::vector<std::string_view> segments;
  size_t start = 1;
  bool trailing = false;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view seg = path.substr(start, end - start);
    trailing = end == path.size() && (seg.empty() || seg == "." || seg == "..");
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    start = end + 1;
  }
  std::string out;
  for (std::string_view s : segments) {
    out.push_back('/');
    out.append(s);
  }
  if (out.empty() || trailing) out.push_back('/');
  out.append(query);
  return out;
}

}  // namespace

bool ValidUrl(std::string_view url) {
  if (url.empty() || url.size() > 2048) return false;
  return std::all_of(url.begin(), url.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

std::string ResolveUrl(std::string_view base, std::string_view href) {
  while (!href.empty() && IsSpace(href.front())) href.remove_prefix(1);
  while (!href.empty() && IsSpace(href.back())) href.remove_suffix(1);
  const size_t hash = href.find('#');
  if (hash != std::string_view::npos) href = href.substr(0, hash);
  if (href.empty() || !ValidUrl(href)) return "";
  // A scheme: letters up to ':' before any '/'.
  const size_t colon = href.find(':');
  if (colon != std::string_view::npos && colon < href.find('/')) {
    std::string scheme;
    for (char c : href.substr(0, colon)) scheme.push_back(Lower(c));
    if (scheme != "http" && scheme != "https" && scheme != "file") return "";
    size_t path_at = 0;
    const std::string_view origin = Origin(href, &path_at);
    if (origin.empty()) return "";
    return std::string(origin) + FoldPath(path_at < href.size() ? href.substr(path_at) : "/");
  }
  size_t base_path_at = 0;
  const std::string_view origin = Origin(base, &base_path_at);
  if (href.substr(0, 2) == "//") {
    const size_t scheme_end = base.find("://");
    if (scheme_end == std::string_view::npos) return "";
    const std::string joined = std::string(base.substr(0, scheme_end + 1)) + std::string(href);
    return ResolveUrl(base, joined);
  }
  std::string path;
  if (href.front() == '/') {
    path = std::string(href);
  } else {
    std::string_view base_path = base.substr(base_path_at);
    const size_t q = base_path.find('?');
    if (q != std::string_view::npos) base_path = base_path.substr(0, q);
    const size_t last = base_path.rfind('/');
    path = (last == std::string_view::npos ? std::string("/") : std::string(base_path.substr(0, last + 1))) +
           std::string(href);
    if (path.front() != '/') path.insert(path.begin(), '/');
  }
  std::string out = std::string(origin) + FoldPath(path);
  return ValidUrl(out) ? out : "";
}

ParsedPage ParseHtml(std::string_view url, std::string_view html) {
  ParsedPage page;
  if (html.size() > kMaxParsedBytes) {
    page.problems.push_back("too large, cut at " + std::to_string(kMaxParsedBytes) + " of " +
                            std::to_string(html.size()) + " bytes");
    html = html.substr(0, kMaxParsedBytes);
  }
  std::string text, title, anchor, href;
  bool in_title = false, in_link = false;
  auto append = [&](std::string_view s) {
    if (in_title) {
      title.append(s);
      return;
    }
    text.append(s);
    if (in_link) anchor.append(s);
  };
  auto end_link = [&] {
    if (!in_link) return;
    in_link = false;
    std::string resolved = ResolveUrl(url, href);
    if (resolved.empty()) {
      if (!href.empty() && href.front() != '#' && href.rfind("mailto:", 0) != 0 &&
          href.rfind("javascript:", 0) != 0) {
        // Control bytes shown as '?': a problem is one line of a report.
        std::string shown = href.substr(0, 200);
        for (char& c : shown) {
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        }
        page.problems.push_back("link not followed: " + shown);
      }
    } else if (resolved != url) {
      page.links.push_back(Link{std::move(resolved), Collapse(anchor)});
    }
    anchor.clear();
    href.clear();
  };
  size_t i = 0;
  while (i < html.size()) {
    const char c = html[i];
    if (c == '&') {
      std::string decoded;
      DecodeReference(html, &i, &decoded);
      append(decoded);
      continue;
    }
    if (c != '<') {
      append(std::string_view(&html[i], 1));
      i++;
      continue;
    }
    if (html.substr(i, 4) == "<!--") {
      const size_t end = html.find("-->", i + 4);
      if (end == std::string_view::npos) {
        page.problems.push_back("unclosed comment at byte " + std::to_string(i));
        break;
      }
      i = end + 3;
      continue;
    }
    if (i + 1 < html.size() && (html[i + 1] == '!' || html[i + 1] == '?')) {
      const size_t end = html.find('>', i);
      if (end == std::string_view::npos) break;
      i = end + 1;
      continue;
    }
    if (i + 1 >= html.size() ||
        !(std::isalpha(static_cast<unsigned char>(html[i + 1])) || html[i + 1] == '/')) {
      append("<");  // a lone '<' is text
      i++;
      continue;
    }
    Tag tag;
    const size_t at = i;
    if (!ReadTag(html, &i, &tag)) {
      page.problems.push_back("unclosed tag at byte " + std::to_string(at));
      break;
    }
    append(" ");  // a tag separates words
    if (!tag.closing && (tag.name == "script" || tag.name == "style")) {
      size_t end = i;
      while (end < html.size() && !StartsWithNoCase(html, end, "</" + tag.name)) {
        end = html.find('<', end + 1);
        if (end == std::string_view::npos) end = html.size();
      }
      if (end >= html.size()) {
        page.problems.push_back("unclosed <" + tag.name + "> at byte " + std::to_string(at));
        break;
      }
      const size_t close = html.find('>', end);
      i = close == std::string_view::npos ? html.size() : close + 1;
      continue;
    }
    if (tag.name == "title") {
      in_title = !tag.closing && title.empty();
    } else if (tag.name == "a") {
      end_link();
      if (!tag.closing && !tag.href.empty()) {
        in_link = true;
        href = std::move(tag.href);
      }
    }
  }
  end_link();
  page.title = Collapse(title);
  page.text = Collapse(text);
  page.fingerprint = Fingerprint(page.title + "\n" + page.text);
  return page;
}

std::vector<std::string> Terms(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.size() >= 2 && cur.size() <= 40) out.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80) {
      cur.push_back(Lower(c));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

uint64_t Fingerprint(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace strata::indexer
