#include "indexer/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "indexer/html.h"

namespace strata::indexer {

namespace {

constexpr char kPages[] = "pages";
constexpr char kClusters[] = "clusters";
constexpr char kInlinks[] = "inlinks";
constexpr char kLinkers[] = "linkers";
constexpr char kPostings[] = "postings";

// Get with NotFound as nullopt.
Result<std::optional<std::string>> Maybe(Transaction* t, std::string_view table,
                                         std::string_view row, std::string_view column,
                                         bool for_update = false) {
  Result<std::string> v =
      for_update ? t->GetForUpdate(table, row, column) : t->Get(table, row, column);
  if (v.ok()) return std::optional<std::string>(std::move(v).value());
  if (v.status().IsNotFound()) return std::optional<std::string>();
  return v.status();
}

// Sets `value`, or erases when nullopt; only if it differs from `old`.
Status Put(Transaction* t, std::string_view table, std::string_view row, std::string_view column,
           const std::optional<std::string>& old, const std::optional<std::string>& value) {
  if (old == value) return Status::OK();
  return value.has_value() ? t->Set(table, row, column, *value) : t->Erase(table, row, column);
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? s.npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); i++) {
    if (i > 0) out.push_back(sep);
    out += parts[i];
  }
  return out;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Every (column, value) of one row of `table`.
Result<std::map<std::string, std::string>> RowOf(Transaction* t, std::string_view table,
                                                 std::string_view row) {
  std::map<std::string, std::string> out;
  const std::string end = std::string(row) + std::string(1, '\0');
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it, t->Scan(table, row, end));
  for (; it->Valid(); it->Next()) out.emplace(it->column(), it->value());
  STRATA_RETURN_IF_ERROR(it->status());
  return out;
}

// Anchors as an inlinks value: each preceded by a tab (an anchor may be
// empty; none holds a tab or a newline, the parser collapses them).
std::string EncodeAnchors(const std::vector<std::string>& anchors) {
  std::string out;
  for (const std::string& a : anchors) out += "\t" + a;
  return out;
}

// A posting as a postings value: "title,text,anchors" counts in decimal.
std::string EncodePosting(const Posting& p) {
  return std::to_string(p.title) + "," + std::to_string(p.text) + "," + std::to_string(p.anchors);
}

Posting DecodePosting(std::string_view value) {
  Posting p;
  uint32_t* fields[] = {&p.title, &p.text, &p.anchors};
  size_t i = 0;
  for (char c : value) {
    if (c == ',') {
      if (++i == 3) break;
    } else if (c >= '0' && c <= '9') {
      *fields[i] = *fields[i] * 10 + static_cast<uint32_t>(c - '0');
    }
  }
  return p;
}

std::vector<std::string> DecodeAnchors(std::string_view value) {
  if (value.empty()) return {};
  if (value == "\t") return {""};  // Split("") is no part; this is one, empty
  return Split(value.substr(1), '\t');
}

// A weak notification: it conflicts with nothing, so the many pages that
// ask one popular page to refresh do not abort each other.
Status AskRefresh(Transaction* t, std::string_view url) {
  return t->SetWeakNotification(kPages, url, "refresh");
}

// Recomputes the canonical of the cluster `fp` and writes canon of every
// member whose canonical changed.
Status RecomputeCluster(Transaction* t, const std::string& fp) {
  STRATA_ASSIGN_OR_RETURN(auto columns, RowOf(t, kClusters, fp));
  std::set<std::string> members;
  for (const auto& [c, v] : columns) {
    if (c.rfind("m:", 0) == 0) members.insert(c.substr(2));
  }
  if (members.empty()) return Status::OK();
  const std::string canonical = CanonicalOf(members);
  for (const std::string& m : members) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old, Maybe(t, kPages, m, "canon"));
    STRATA_RETURN_IF_ERROR(Put(t, kPages, m, "canon", old, canonical));
  }
  return Status::OK();
}

class ParseObserver final : public Observer {
 public:
  Status Process(Transaction* t, std::string_view table, std::string_view url,
                 std::string_view column) override {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> raw, Maybe(t, kPages, url, "raw"));
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old_fp, Maybe(t, kPages, url, "fp"));
    std::optional<std::string> fp;
    struct Field {
      const char* name;
      std::optional<std::string> value;
    };
    std::vector<Field> fields = {{"title", {}}, {"text", {}}, {"links", {}}, {"problems", {}}};
    std::set<std::string> linked;
    if (raw.has_value()) {
      const ParsedPage p = ParseHtml(url, *raw);
      fp = Hex(p.fingerprint);
      std::string links;
      for (const Link& l : p.links) {
        links += l.url + "\t" + l.anchor + "\n";
        linked.insert(l.url);
      }
      fields = {{"title", p.title}, {"text", p.text}, {"links", links}, {"problems", {}}};
      if (!p.problems.empty()) fields.back().value = Join(p.problems, '\n');
    }
    // Linkers: the pages to refresh when a linked page's canonical moves.
    // Registered here, before the page's refresh reads those canonicals, so
    // that a canonical moving after that read always finds this page.
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old_linked_s, Maybe(t, kPages, url, "linked"));
    const std::vector<std::string> old_linked_v = Split(old_linked_s.value_or(""), '\n');
    const std::set<std::string> old_linked(old_linked_v.begin(), old_linked_v.end());
    for (const std::string& l : old_linked) {
      if (!l.empty() && linked.count(l) == 0) STRATA_RETURN_IF_ERROR(t->Erase(kLinkers, l, url));
    }
    for (const std::string& l : linked) {
      if (old_linked.count(l) == 0) STRATA_RETURN_IF_ERROR(t->Set(kLinkers, l, url, ""));
    }
    const std::string linked_s = Join(std::vector<std::string>(linked.begin(), linked.end()), '\n');
    STRATA_RETURN_IF_ERROR(Put(t, kPages, url, "linked", old_linked_s,
                               linked_s.empty() ? std::nullopt : std::optional<std::string>(linked_s)));
    for (const Field& f : fields) {
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old, Maybe(t, kPages, url, f.name));
      STRATA_RETURN_IF_ERROR(Put(t, kPages, url, f.name, old, f.value));
    }
    STRATA_RETURN_IF_ERROR(Put(t, kPages, url, "fp", old_fp, fp));
    const std::string member = "m:" + std::string(url);
    if (old_fp != fp && old_fp.has_value()) {
      STRATA_RETURN_IF_ERROR(t->Erase(kClusters, *old_fp, member));
      STRATA_RETURN_IF_ERROR(t->Set(kClusters, *old_fp, "v", std::to_string(t->start_ts())));
      STRATA_RETURN_IF_ERROR(RecomputeCluster(t, *old_fp));
    }
    if (fp.has_value()) {
      if (old_fp != fp) STRATA_RETURN_IF_ERROR(t->Set(kClusters, *fp, member, ""));
      STRATA_RETURN_IF_ERROR(t->Set(kClusters, *fp, "v", std::to_string(t->start_ts())));
      STRATA_RETURN_IF_ERROR(RecomputeCluster(t, *fp));
    } else {
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> canon, Maybe(t, kPages, url, "canon"));
      STRATA_RETURN_IF_ERROR(Put(t, kPages, url, "canon", canon, std::nullopt));
    }
    return AskRefresh(t, url);
  }
};

class RefreshObserver final : public Observer {
 public:
  Status Process(Transaction* t, std::string_view table, std::string_view url,
                 std::string_view column) override {
    const std::string u(url);
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> canon, Maybe(t, kPages, u, "canon"));
    const bool canonical = canon.has_value() && *canon == u;
    // Anchors onto the canonicals of the pages linked to.
    std::map<std::string, std::vector<std::string>> outs;
    std::string title, text;
    if (canonical) {
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> links, Maybe(t, kPages, u, "links"));
      for (const std::string& line : Split(links.value_or(""), '\n')) {
        if (line.empty()) continue;
        const size_t tab = line.find('\t');
        const std::string target = line.substr(0, tab);
        const std::string anchor = tab == std::string::npos ? "" : line.substr(tab + 1);
        STRATA_ASSIGN_OR_RETURN(std::optional<std::string> tc, Maybe(t, kPages, target, "canon"));
        if (tc.has_value() && *tc != u) outs[*tc].push_back(anchor);
      }
      for (auto& [target, anchors] : outs) std::sort(anchors.begin(), anchors.end());
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> ti, Maybe(t, kPages, u, "title"));
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> te, Maybe(t, kPages, u, "text"));
      title = ti.value_or("");
      text = te.value_or("");
    }
    // Outs: inlinks rows of the targets, and a refresh of each changed one.
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old_outs_s, Maybe(t, kPages, u, "outs"));
    std::map<std::string, std::string> old_outs, new_outs;
    for (const std::string& line : Split(old_outs_s.value_or(""), '\n')) {
      const size_t sep = line.find('\x01');
      if (sep != std::string::npos) old_outs[line.substr(0, sep)] = line.substr(sep + 1);
    }
    std::string outs_s;
    for (const auto& [target, anchors] : outs) {
      new_outs[target] = EncodeAnchors(anchors);
      outs_s += target + '\x01' + new_outs[target] + '\n';
    }
    std::set<std::string> targets;
    for (const auto& [k, v] : old_outs) targets.insert(k);
    for (const auto& [k, v] : new_outs) targets.insert(k);
    for (const std::string& target : targets) {
      auto o = old_outs.find(target);
      auto n = new_outs.find(target);
      const std::optional<std::string> ov =
          o == old_outs.end() ? std::nullopt : std::optional<std::string>(o->second);
      const std::optional<std::string> nv =
          n == new_outs.end() ? std::nullopt : std::optional<std::string>(n->second);
      if (ov == nv) continue;
      STRATA_RETURN_IF_ERROR(Put(t, kInlinks, target, u, ov, nv));
      STRATA_RETURN_IF_ERROR(AskRefresh(t, target));
    }
    STRATA_RETURN_IF_ERROR(Put(t, kPages, u, "outs", old_outs_s,
                               outs_s.empty() ? std::nullopt : std::optional<std::string>(outs_s)));
    // Terms: title, text and incoming anchors of a canonical page, with
    // their postings. The page's terms cell keeps them as "term:posting"
    // words, so that only the postings that change are written.
    std::map<std::string, std::string> terms;
    if (canonical) {
      STRATA_ASSIGN_OR_RETURN(auto in, RowOf(t, kInlinks, u));
      std::vector<std::string_view> anchors;
      for (const auto& [source, encoded] : in) anchors.push_back(encoded);  // tabs separate terms
      for (const auto& [term, posting] : PostingsOf(title, text, anchors)) {
        terms.emplace(term, EncodePosting(posting));
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> old_terms_s, Maybe(t, kPages, u, "terms"));
    std::map<std::string, std::string> old_terms;
    for (const std::string& word : Split(old_terms_s.value_or(""), ' ')) {
      const size_t colon = word.find(':');
      if (colon != std::string::npos)
        old_terms.emplace(word.substr(0, colon), word.substr(colon + 1));
    }
    for (const auto& [term, posting] : old_terms) {
      if (terms.count(term) == 0) STRATA_RETURN_IF_ERROR(t->Erase(kPostings, term, u));
    }
    std::string terms_s;
    for (const auto& [term, posting] : terms) {
      auto old = old_terms.find(term);
      if (old == old_terms.end() || old->second != posting) {
        STRATA_RETURN_IF_ERROR(t->Set(kPostings, term, u, posting));
      }
      if (!terms_s.empty()) terms_s.push_back(' ');
      terms_s += term + ":" + posting;
    }
    STRATA_RETURN_IF_ERROR(Put(t, kPages, u, "terms", old_terms_s,
                               terms_s.empty() ? std::nullopt : std::optional<std::string>(terms_s)));
    // A canonical that moved changes what every page linking here
    // contributes.
    if (column == "canon") {
      STRATA_ASSIGN_OR_RETURN(auto linkers, RowOf(t, kLinkers, u));
      for (const auto& [source, v] : linkers) STRATA_RETURN_IF_ERROR(AskRefresh(t, source));
    }
    return Status::OK();
  }
};

}  // namespace

std::vector<ObservedColumn> PipelineObservedColumns() {
  return {{kPages, "raw"}, {kPages, "canon"}};
}

Status CreatePipelineTables(TransactionDB* db) {
  for (const char* table : {kPages, kClusters, kInlinks, kLinkers, kPostings}) {
    Status s = db->CreateTable(table);
    if (!s.ok() && !s.IsAlreadyExists()) return s;
  }
  return Status::OK();
}

std::vector<ObserverSpec> PipelineObservers() {
  auto refresh = std::make_shared<RefreshObserver>();
  return {{kPages, "raw", NotificationKind::kStrong, std::make_shared<ParseObserver>()},
          {kPages, "canon", NotificationKind::kStrong, refresh},
          {kPages, "refresh", NotificationKind::kWeak, refresh}};
}

namespace {

// Commits `write` in a transaction of its own, again while it aborts (an
// observer's run on the page holds its raw cell for a moment).
Status WriteRaw(TransactionDB* db, const std::function<Status(Transaction*)>& write) {
  Status s;
  for (int attempt = 0; attempt < 100; attempt++) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db->Begin());
    s = write(t.get());
    if (s.ok()) s = t->Commit();
    if (!s.IsAborted() && !s.IsBusy()) return s;
    std::this_thread::sleep_for(std::chrono::microseconds(100 << std::min(attempt, 7)));
  }
  return s;
}

}  // namespace

Status PutPage(TransactionDB* db, std::string_view url, std::string_view html) {
  if (!ValidUrl(url)) return Status::InvalidArgument("not a page URL: " + std::string(url.substr(0, 200)));
  return WriteRaw(db, [&](Transaction* t) { return t->Set(kPages, url, "raw", html); });
}

Status DeletePage(TransactionDB* db, std::string_view url) {
  return WriteRaw(db, [&](Transaction* t) { return t->Erase(kPages, url, "raw"); });
}

Result<std::vector<Page>> ReadPages(TransactionDB* db) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db->Begin());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it,
                          t->Scan(kPages, "", "", {"raw"}));
  std::vector<Page> pages;
  for (; it->Valid(); it->Next())
    pages.push_back(Page{std::string(it->row()), std::string(it->value())});
  STRATA_RETURN_IF_ERROR(it->status());
  return pages;
}

Result<Index> ReadIndex(TransactionDB* db) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db->Begin());
  Index index;
  {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it,
                            t->Scan(kPages, "", "", {"fp", "canon", "problems"}));
    for (; it->Valid(); it->Next()) {
      if (it->column() == "canon") {
        index.canonical[std::string(it->row())] = std::string(it->value());
      } else if (it->column() == "problems") {
        index.problems[std::string(it->row())] = Split(it->value(), '\n');
      } else {
        index.clusters[std::strtoull(std::string(it->value()).c_str(), nullptr, 16)].insert(
            std::string(it->row()));
      }
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it, t->Scan(kInlinks, "", ""));
    for (; it->Valid(); it->Next()) {
      index.inlinks[std::string(it->row())][std::string(it->column())] = DecodeAnchors(it->value());
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it, t->Scan(kPostings, "", ""));
    for (; it->Valid(); it->Next()) {
      index.postings[std::string(it->row())][std::string(it->column())] =
          DecodePosting(it->value());
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  return index;
}

double TermWeight(const Posting& p) {
  auto saturated = [](uint32_t n) { return n / (n + 1.2); };
  return 3 * saturated(p.title) + saturated(p.text) + 2 * saturated(p.anchors);
}

Result<std::vector<SearchHit>> Search(TransactionDB* db, std::string_view query, size_t limit) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db->Begin());
  std::map<std::string, SearchHit> hits;
  const std::vector<std::string> terms_v = Terms(query);
  const std::set<std::string> terms(terms_v.begin(), terms_v.end());
  for (const std::string& term : terms) {
    STRATA_ASSIGN_OR_RETURN(auto postings, RowOf(t.get(), kPostings, term));
    const double idf =
        std::log(1 + 1e6 / static_cast<double>(std::max<size_t>(postings.size(), 1)));
    for (const auto& [url, value] : postings) {
      SearchHit& h = hits[url];
      h.url = url;
      h.matched++;
      h.score += idf * TermWeight(DecodePosting(value));
    }
  }
  std::vector<SearchHit> out;
  out.reserve(hits.size());
  for (auto& [url, h] : hits) out.push_back(std::move(h));
  std::sort(out.begin(), out.end(), [](const SearchHit& a, const SearchHit& b) {
    if (a.matched != b.matched) return a.matched > b.matched;
    if (a.score != b.score) return a.score > b.score;
    return a.url < b.url;
  });
  if (out.size() > limit) out.resize(limit);
  for (SearchHit& h : out) {
    STRATA_ASSIGN_OR_RETURN(auto in, RowOf(t.get(), kInlinks, h.url));
    h.inlinks = in.size();
  }
  return out;
}

}  // namespace strata::indexer
