// strata-indexer: the incremental indexing pipeline (pipeline.h) run end to
// end on a corpus: load every page while the observers work, wait until they
// are done, check the index against the batch computation of the same
// corpus, then edit pages one at a time and time how long each edit takes to
// become searchable, against the time of the batch recompute; then answer
// searches. Uses the public API only.
//
//   strata-indexer [--corpus=[NAME=]DIR... | --synthetic=N] [--threads=N]
//                  [--edits=N] [--db=DIR] [--search=WORDS]... [--metrics=FILE]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "indexer/batch.h"
#include "indexer/corpus.h"
#include "indexer/html.h"
#include "indexer/pipeline.h"
#include "strata/engine.h"
#include "strata/metrics.h"
#include "strata/observer.h"
#include "strata/transaction.h"

namespace {

using Clock = std::chrono::steady_clock;
using strata::indexer::Page;

struct Flags {
  std::vector<std::string> corpora;  // DIR or NAME=DIR
  uint64_t synthetic = 0;
  int threads = 2;
  int edits = 20;
  std::string db;
  std::vector<std::string> searches;
  std::string metrics;  // where to write the metrics at the end; "" = nowhere
};

void Usage() {
  std::printf(
      "strata-indexer: an incremental web index on Strata's observers.\n\n"
      "  --corpus=DIR     index every *.html under DIR (URLs http://docs.local/<path>)\n"
      "  --corpus=NAME=DIR  the same with URLs http://docs.local/NAME/<path>; may be\n"
      "                   repeated, to index several trees (such as two releases of one\n"
      "                   manual, whose unchanged pages are duplicates) as one corpus\n"
      "  --synthetic=N    index a synthetic corpus of N linked pages with duplicates\n"
      "                   (the default, with N = 2000, when neither is given)\n"
      "  --threads=N      observer worker threads (default 2)\n"
      "  --edits=N        pages edited one at a time after loading, each timed until it is\n"
      "                   searchable (default 20)\n"
      "  --db=DIR         where the database goes (default: a new directory under $TMPDIR,\n"
      "                   removed at the end)\n"
      "  --search=WORDS   a search to answer at the end (may be repeated)\n"
      "  --metrics=FILE   at the end, write the engine's, the transactions', and the\n"
      "                   observers' metrics to FILE (strata/metrics.h): JSON when FILE\n"
      "                   ends in .json, else Prometheus text\n"
      "  --help           this text\n\n"
      "It prints progress while loading, then: pages, clusters, links and terms; pages/s\n"
      "and observer runs/s; storage operations and bytes written per page; whether the\n"
      "index equals the batch computation; the pages skipped or read with problems; the\n"
      "delay from an edit's commit to it being searchable (p50, p99) against the time of\n"
      "the batch recompute; and the searches' answers, ranked.\n");
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      return a.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (a == "--help" || a == "-h") {
      Usage();
      std::exit(0);
    } else if (const char* v = value("--corpus")) {
      f->corpora.push_back(v);
    } else if (const char* v = value("--synthetic")) {
      f->synthetic = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--threads")) {
      f->threads = std::atoi(v);
    } else if (const char* v = value("--edits")) {
      f->edits = std::atoi(v);
    } else if (const char* v = value("--db")) {
      f->db = v;
    } else if (const char* v = value("--search")) {
      f->searches.push_back(v);
    } else if (const char* v = value("--metrics")) {
      f->metrics = v;
    } else {
      std::fprintf(stderr, "strata-indexer: unknown flag %s (--help lists them)\n", argv[i]);
      return false;
    }
  }
  if (!f->corpora.empty() && f->synthetic > 0) {
    std::fprintf(stderr, "strata-indexer: --corpus and --synthetic exclude each other\n");
    return false;
  }
  if (f->corpora.empty() && f->synthetic == 0) f->synthetic = 2000;
  if (f->threads < 1 || f->threads > 64 || f->edits < 0) {
    std::fprintf(stderr, "strata-indexer: bad flag value (--help says what each takes)\n");
    return false;
  }
  return true;
}

bool Check(const strata::Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "strata-indexer: %s: %s\n", what, s.ToString().c_str());
  return false;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// The pages refused (a URL the pipeline does not take) and the pages read
// with problems, by kind, with an example of each.
void ReportBadInput(const std::vector<std::string>& refused,
                    const std::map<std::string, std::vector<std::string>>& problems) {
  std::map<std::string, std::pair<size_t, std::string>> kinds;  // kind -> count, example
  for (const auto& [url, list] : problems) {
    for (const std::string& p : list) {
      // The kind is the problem up to its details: "unclosed tag", "too large".
      const std::string kind = p.substr(0, std::min(p.find_first_of(",:"), p.find(" at ")));
      auto [it, inserted] = kinds.try_emplace(kind, 0, url + ": " + p);
      it->second.first++;
    }
  }
  std::printf("bad input: %zu pages refused, %zu pages read with problems%s\n", refused.size(),
              problems.size(), refused.empty() && problems.empty() ? "" : ":");
  if (!refused.empty()) {
    std::printf("  %zu refused, e.g. %s\n", refused.size(), refused.front().substr(0, 160).c_str());
  }
  for (const auto& [kind, count_example] : kinds) {
    std::printf("  %zu %s, e.g. %s\n", count_example.first, kind.c_str(),
                count_example.second.substr(0, 160).c_str());
  }
}

int Run(const Flags& f) {
  // The corpus.
  std::vector<Page> pages;
  for (const std::string& c : f.corpora) {
    const size_t eq = c.find('=');
    const std::string name = eq == std::string::npos ? "" : c.substr(0, eq);
    const std::string root = eq == std::string::npos ? c : c.substr(eq + 1);
    std::vector<std::string> skipped;
    std::vector<Page> tree = strata::indexer::LoadHtmlTree(
        root, "http://docs.local/" + (name.empty() ? "" : name + "/"), &skipped);
    for (const std::string& s : skipped) std::printf("skipped (unreadable): %s\n", s.c_str());
    if (tree.empty()) {
      std::fprintf(stderr, "strata-indexer: no *.html page under %s\n", root.c_str());
      return 2;
    }
    std::printf("corpus: %zu pages from %s\n", tree.size(), root.c_str());
    std::move(tree.begin(), tree.end(), std::back_inserter(pages));
  }
  if (f.corpora.empty()) {
    strata::indexer::SyntheticCorpus corpus({.pages = f.synthetic, .seed = 1});
    for (uint64_t i = 0; i < corpus.size(); i++) pages.push_back(corpus.PageAt(i));
    std::printf("corpus: %zu pages from the synthetic generator\n", pages.size());
  }
  // Two trees loaded under one NAME would make pages of both one URL.
  std::stable_sort(pages.begin(), pages.end(),
                   [](const Page& a, const Page& b) { return a.url < b.url; });
  for (size_t i = 1; i < pages.size(); i++) {
    if (pages[i].url == pages[i - 1].url) {
      std::fprintf(stderr, "strata-indexer: %s is in two corpora; give each its own NAME=\n",
                   pages[i].url.c_str());
      return 2;
    }
  }

  // The database.
  const bool temporary = f.db.empty();
  const std::string dir = temporary ? (std::filesystem::temp_directory_path() /
                                       ("strata-indexer." + std::to_string(::getpid())))
                                          .string()
                                    : f.db;
  std::filesystem::create_directories(dir);
  auto engine = strata::Engine::Open(dir + "/db");
  if (!Check(engine.status(), "opening the engine")) return 1;
  strata::Status s = (*engine)->CreateTenant("web");
  if (!s.ok() && !s.IsAlreadyExists()) return Check(s, "creating the tenant") ? 0 : 1;
  auto services = strata::TransactionServices::Open(dir + "/services");
  if (!Check(services.status(), "opening the transaction services")) return 1;
  strata::TransactionDBOptions options;
  options.sync = false;
  options.observed_columns = strata::indexer::PipelineObservedColumns();
  auto db = strata::TransactionDB::Open(*services, *(*engine)->OpenTenant("web"), options);
  if (!Check(db.status(), "opening the transaction db")) return 1;
  if (!Check(strata::indexer::CreatePipelineTables(db->get()), "creating the tables")) return 1;
  auto worker = strata::ObserverWorker::Start(db->get(), strata::indexer::PipelineObservers(),
                                              {.threads = f.threads});
  if (!Check(worker.status(), "starting the observers")) return 1;

  // Load, with progress, then wait for the observers.
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  auto tenant_stats = [&] { return *(*engine)->OpenTenant("web")->GetStats(); };
  const strata::TenantStats tenant_before = tenant_stats();
  const strata::EngineStats engine_before = (*engine)->GetStats();
  const auto load_start = Clock::now();
  std::vector<std::string> refused;
  for (size_t i = 0; i < pages.size(); i++) {
    s = strata::indexer::PutPage(db->get(), pages[i].url, pages[i].html);
    if (s.IsInvalidArgument()) {
      refused.emplace_back(s.message());
      continue;
    }
    if (!Check(s, "loading a page")) return 1;
    // On a terminal the line is redrawn every 5%; elsewhere a line per 20%.
    const size_t step = std::max<size_t>(1, pages.size() / (tty ? 20 : 5));
    if ((i + 1) % step == 0 || i + 1 == pages.size()) {
      std::printf("%sloading: %zu/%zu pages%s", tty ? "\r" : "", i + 1, pages.size(),
                  tty ? "" : "\n");
      std::fflush(stdout);
    }
  }
  if (tty) std::printf("\n");
  for (int waited = 1;; waited++) {
    s = (*worker)->WaitForQuiescence(1000);
    if (s.ok()) break;
    if (!s.IsTimedOut()) return Check(s, "waiting for the observers") ? 0 : 1;
    if (tty || waited % 10 == 0) {
      std::printf("%sconverging: %" PRIu64 " notifications pending%s", tty ? "\r" : "",
                  (*worker)->GetStats().pending, tty ? "   " : "\n");
      std::fflush(stdout);
    }
  }
  const double load_seconds = Seconds(load_start);
  const strata::ObserverStats stats = (*worker)->GetStats();
  const size_t loaded = pages.size() - refused.size();
  std::printf("%sconverged in %.1f s: %.0f pages/s, %" PRIu64 " observer runs (%.0f/s), %" PRIu64
              " aborted and tried again\n",
              tty ? "\r" : "", load_seconds, loaded / load_seconds, stats.runs,
              stats.runs / load_seconds, stats.aborted);
  {
    // Storage operations as the paper counts them: row reads, row writes
    // and scans of the store, here of every table and of the observers'
    // notification scans, from the first page loaded to quiescence.
    const strata::TenantStats t = tenant_stats();
    const strata::EngineStats e = (*engine)->GetStats();
    const double n = static_cast<double>(std::max<size_t>(loaded, 1));
    const uint64_t reads = t.row_reads - tenant_before.row_reads;
    const uint64_t writes = t.row_writes - tenant_before.row_writes;
    const uint64_t scans = t.scans - tenant_before.scans;
    const uint64_t sst = e.flush_bytes_written + e.compaction_bytes_written -
                         engine_before.flush_bytes_written - engine_before.compaction_bytes_written;
    std::printf(
        "storage per page: %.1f operations (%.1f row reads, %.1f row writes, %.1f scans); "
        "%.1f KiB written (%.1f KiB of cells, %.1f KiB of log, %.1f KiB of SSTables)\n",
        (reads + writes + scans) / n, reads / n, writes / n, scans / n,
        (t.bytes_written - tenant_before.bytes_written + e.wal_bytes - engine_before.wal_bytes +
         sst) /
            n / 1024,
        (t.bytes_written - tenant_before.bytes_written) / n / 1024,
        (e.wal_bytes - engine_before.wal_bytes) / n / 1024, sst / n / 1024);
  }

  // The batch computation of the same corpus: the check and the baseline.
  const auto batch_start = Clock::now();
  strata::indexer::Index batch = strata::indexer::BuildIndex(pages);
  double batch_seconds = Seconds(batch_start);
  auto got = strata::indexer::ReadIndex(db->get());
  if (!Check(got.status(), "reading the index")) return 1;
  size_t links = 0;
  for (const auto& [target, sources] : got->inlinks) links += sources.size();
  std::printf("index: %zu pages in %zu clusters, %zu links between canonical pages, %zu terms\n",
              got->canonical.size(), got->clusters.size(), links, got->postings.size());
  const bool equal = *got == batch;
  std::printf("equals the batch computation: %s (batch: %.2f s)\n", equal ? "yes" : "NO",
              batch_seconds);
  ReportBadInput(refused, got->problems);

  // Edits, one at a time: from commit to searchable.
  std::vector<double> delays_ms;
  std::mt19937_64 rng(7);
  for (int e = 0; e < f.edits; e++) {
    Page& p = pages[rng() % pages.size()];
    const std::string marker = "zqedit" + std::to_string(e);
    p.html += "<p>" + marker + "</p>";
    if (!Check(strata::indexer::PutPage(db->get(), p.url, p.html), "editing a page")) return 1;
    const auto committed = Clock::now();
    for (;;) {
      auto hits = strata::indexer::Search(db->get(), marker, 1);
      if (!Check(hits.status(), "searching")) return 1;
      if (!hits->empty()) break;
      if (Seconds(committed) > 60) {
        std::fprintf(stderr, "strata-indexer: edit %d not searchable after 60 s\n", e);
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    delays_ms.push_back(Seconds(committed) * 1000);
  }
  if (f.edits > 0) {
    if (!Check((*worker)->WaitForQuiescence(600'000), "waiting for the observers")) return 1;
    const auto rebatch_start = Clock::now();
    batch = strata::indexer::BuildIndex(pages);
    batch_seconds = Seconds(rebatch_start);
    got = strata::indexer::ReadIndex(db->get());
    if (!Check(got.status(), "reading the index")) return 1;
    const double p50 = Percentile(delays_ms, 0.5), p99 = Percentile(delays_ms, 0.99);
    std::printf(
        "edits: %d, each searchable after p50 %.1f ms, p99 %.1f ms; the batch recompute "
        "takes %.0f ms (%.0fx the p50); index still equals the batch: %s\n",
        f.edits, p50, p99, batch_seconds * 1000, batch_seconds * 1000 / std::max(p50, 1e-3),
        *got == batch ? "yes" : "NO");
  }

  for (const std::string& q : f.searches) {
    auto hits = strata::indexer::Search(db->get(), q, 10);
    if (!Check(hits.status(), "searching")) return 1;
    const std::vector<std::string> terms = strata::indexer::Terms(q);
    const std::set<std::string> query_terms(terms.begin(), terms.end());
    std::printf("search '%s':\n", q.c_str());
    for (const auto& h : *hits) {
      std::printf("  %-70s score %5.1f, %zu/%zu terms, %zu in-links\n", h.url.c_str(), h.score,
                  h.matched, query_terms.size(), h.inlinks);
    }
    if (hits->empty()) std::printf("  no page\n");
  }

  if (!f.metrics.empty()) {
    strata::MetricsSources sources;
    sources.engine = engine->get();
    sources.tenants.push_back({"web", db->get(), nullptr, worker->get()});
    const bool json =
        f.metrics.size() >= 5 && f.metrics.compare(f.metrics.size() - 5, 5, ".json") == 0;
    if (!Check(
            strata::WriteMetricsFile(
                sources, json ? strata::MetricsFormat::kJson : strata::MetricsFormat::kPrometheus,
                f.metrics),
            "writing the metrics")) {
      return 1;
    }
    std::printf("metrics: %s\n", f.metrics.c_str());
  }

  worker->reset();
  (void)(*db)->Close();
  db->reset();
  services->reset();
  (void)(*engine)->Close();
  engine->reset();
  if (temporary) std::filesystem::remove_all(dir);
  return equal ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return 2;
  return Run(f);
}
