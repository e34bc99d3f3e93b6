#include "corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace strata::indexer {

std::vector<Page> LoadHtmlTree(const std::string& root, const std::string& url_prefix,
                               std::vector<std::string>* skipped) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".html") {
      // Lexically: a symlinked page is a copy at its own path, as a web
      // server would serve it, not its target's.
      paths.push_back(it->path().lexically_relative(root).generic_string());
    }
  }
  if (ec) skipped->push_back(root + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<Page> pages;
  for (const std::string& p : paths) {
    std::ifstream in(fs::path(root) / p, std::ios::binary);
    std::ostringstream body;
    body << in.rdbuf();
    if (!in.good() && !in.eof()) {
      skipped->push_back(p);
      continue;
    }
    pages.push_back(Page{url_prefix + p, body.str()});
  }
  return pages;
}

namespace {

// A pseudo-word of the corpus's vocabulary: pronounceable, deterministic.
std::string Word(uint64_t n) {
  static constexpr const char* kSyllables[] = {"ka", "lo", "mi", "ne", "su", "ta", "ri", "po",
                                               "va", "de", "zu", "fe", "go", "hi", "ja", "bo"};
  std::string w;
  do {
    w += kSyllables[n % 16];
    n /= 16;
  } while (n > 0);
  return w;
}

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

}  // namespace

std::string SyntheticCorpus::Url(uint64_t i) const {
  return "http://synthetic.example/p/" + std::to_string(i) + ".html";
}

Page SyntheticCorpus::PageAt(uint64_t i, uint64_t version) const {
  // A copy takes its content from the page before it; an edit can make a
  // page a copy or stop it being one.
  uint64_t source = i;
  const bool copy = options_.duplicate_every > 0 && i > 0 &&
                    (Mix(options_.seed, i * 1000003 + version) % options_.duplicate_every) == 0;
  if (copy) source = i - 1;
  const uint64_t content_version = copy ? 0 : version;
  std::mt19937_64 rng(Mix(options_.seed, Mix(source, content_version)));
  const uint64_t vocabulary = 5000;
  std::string title = Word(rng() % vocabulary) + " " + Word(rng() % vocabulary);
  std::string html = "<html><head><title>" + title + "</title></head><body><p>";
  for (uint32_t w = 0; w < options_.words_per_page; w++) {
    // Zipf-like: small word numbers are frequent.
    const uint64_t r = rng() % vocabulary;
    html += Word(r * r / vocabulary) + (w % 15 == 14 ? ".</p><p>" : " ");
  }
  html += "</p><ul>";
  for (uint32_t l = 0; l < options_.links_per_page && options_.pages > 1; l++) {
    const uint64_t target = rng() % options_.pages;
    html += "<li><a href=\"" + std::to_string(target) + ".html\">" + Word(rng() % vocabulary) +
            " " + Word(rng() % vocabulary) + "</a></li>";
  }
  html += "</ul></body></html>";
  return Page{Url(i), std::move(html)};
}

}  // namespace strata::indexer
