#include "history.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace strata::test {
namespace {

constexpr size_t kKeptPerType = 5;  // anomalies of one type described in full

enum class Edge : uint8_t { kWW, kWR, kRW };
const char* EdgeName(Edge e) { return e == Edge::kWW ? "ww" : e == Edge::kWR ? "wr" : "rw"; }

std::string ListText(const std::vector<int64_t>& list) {
  std::string s = "[";
  for (size_t i = 0; i < list.size(); i++) {
    if (i > 0) s += ",";
    if (i == 8 && list.size() > 12) {
      s += "... (" + std::to_string(list.size() - 10) + " more) ...,";
      i = list.size() - 2;
    }
    s += std::to_string(list[i]);
  }
  return s + "]";
}

class Checker {
 public:
  explicit Checker(const History& h) : h_(h) {}

  HistoryCheck Run() {
    IndexAppends();
    CheckReads();
    OrderVersions();
    CheckLostUpdates();
    BuildGraph();
    FindCycles();
    for (const auto& [type, n] : counts_) result_.counts.emplace_back(type, n);
    return std::move(result_);
  }

 private:
  struct Writer {
    size_t txn;  // index in h_
  };
  struct OutEdge {
    int to;
    Edge e;
    std::string key;
  };

  void Report(const std::string& type, const std::string& description) {
    if (counts_[type]++ < kKeptPerType) result_.anomalies.push_back({type, description});
  }

  std::string TxnText(size_t t) const {
    const HistoryTxn& txn = h_[t];
    return "T" + std::to_string(txn.id) + "(" +
           (txn.outcome == HistoryTxn::Outcome::kOk     ? "ok"
            : txn.outcome == HistoryTxn::Outcome::kFail ? "fail"
                                                        : "unknown") +
           ")";
  }

  bool Committed(size_t t) const { return h_[t].outcome == HistoryTxn::Outcome::kOk; }

  void IndexAppends() {
    for (size_t t = 0; t < h_.size(); t++) {
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kAppend) continue;
        auto [it, fresh] = writers_[op.key].emplace(op.value, Writer{t});
        if (!fresh) {
          Report("duplicate append", "value " + std::to_string(op.value) + " appended to " +
                                         op.key + " by " + TxnText(it->second.txn) + " and " +
                                         TxnText(t));
        }
        last_append_[{t, op.key}] = op.value;
      }
    }
  }

  // Per read: values with no writer, duplicates, aborted and intermediate reads.
  void CheckReads() {
    for (size_t t = 0; t < h_.size(); t++) {
      if (!Committed(t)) continue;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kRead) continue;
        result_.reads_checked++;
        const auto& writers = writers_[op.key];
        std::set<int64_t> seen;
        std::map<size_t, int64_t> last_of_writer;  // writer txn -> its last value in the read
        for (int64_t v : op.list) {
          if (!seen.insert(v).second) {
            Report("duplicate", TxnText(t) + " read " + op.key + " = " + ListText(op.list) + ": " +
                                    std::to_string(v) + " twice");
          }
          auto w = writers.find(v);
          if (w == writers.end()) {
            Report("garbage read", TxnText(t) + " read " + op.key + " = " + ListText(op.list) +
                                       ": no transaction appended " + std::to_string(v));
            continue;
          }
          seen_writers_.insert(w->second.txn);
          if (h_[w->second.txn].outcome == HistoryTxn::Outcome::kFail) {
            Report("G1a", TxnText(t) + " read " + op.key + " = " + ListText(op.list) + ": " +
                              std::to_string(v) + " was appended by " + TxnText(w->second.txn) +
                              ", which failed");
          }
          last_of_writer[w->second.txn] = v;
        }
        for (const auto& [w, v] : last_of_writer) {
          if (w == t) continue;
          const int64_t final_value = last_append_[{w, op.key}];
          if (v != final_value) {
            Report("G1b", TxnText(t) + " read " + op.key + " = " + ListText(op.list) + ": it has " +
                              std::to_string(v) + " of " + TxnText(w) +
                              " but not that transaction's later append " +
                              std::to_string(final_value));
          }
        }
      }
    }
  }

  // Each key's version order: the longest read, which every other read must
  // be a prefix of.
  void OrderVersions() {
    for (size_t t = 0; t < h_.size(); t++) {
      if (!Committed(t)) continue;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kRead) continue;
        std::vector<int64_t>& order = order_[op.key];
        if (op.list.size() > order.size()) order = op.list;
      }
    }
    for (auto& [key, order] : order_) {
      std::unordered_map<int64_t, size_t> pos;
      for (size_t i = 0; i < order.size(); i++) pos.emplace(order[i], i);
      position_[key] = std::move(pos);
    }
    for (size_t t = 0; t < h_.size(); t++) {
      if (!Committed(t)) continue;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kRead) continue;
        const std::vector<int64_t>& order = order_[op.key];
        if (!std::equal(op.list.begin(), op.list.end(), order.begin())) {
          Report("incompatible order", TxnText(t) + " read " + op.key + " = " + ListText(op.list) +
                                           ", not a prefix of " + ListText(order) +
                                           ", which another read saw");
        }
      }
      // A committed append missing from a read that began after it.
      if (!h_[t].final_read) continue;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kRead) continue;
        std::set<int64_t> in_read(op.list.begin(), op.list.end());
        for (const auto& [value, w] : writers_[op.key]) {
          if (Committed(w.txn) && in_read.count(value) == 0) {
            Report("lost write", TxnText(w.txn) + " appended " + std::to_string(value) + " to " +
                                     op.key + " and committed, but the final read " + TxnText(t) +
                                     " has " + ListText(op.list));
          }
        }
      }
    }
  }

  // A transaction that read a key and appended to it must have its append
  // right after what it read: anything between is a commit its write
  // conflicted with.
  void CheckLostUpdates() {
    std::map<std::pair<std::string, size_t>, size_t> appended_after;  // (key, read length) -> txn
    for (size_t t = 0; t < h_.size(); t++) {
      if (!Committed(t)) continue;
      // Per key, where the transaction's next append must land: after what it
      // last read there and its own appends since.
      std::map<std::string, size_t> expect;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind == HistoryOp::Kind::kRead) {
          expect[op.key] = op.list.size();
          continue;
        }
        auto e = expect.find(op.key);
        if (e == expect.end()) continue;  // a blind append
        const size_t at = e->second++;
        auto [it, fresh] = appended_after.emplace(std::make_pair(op.key, at), t);
        if (!fresh && it->second != t) {
          Report("lost update", TxnText(it->second) + " and " + TxnText(t) + " both read version " +
                                    std::to_string(at) + " of " + op.key +
                                    " and both appended to it");
        }
        const auto& pos = position_[op.key];
        auto p = pos.find(op.value);
        if (p != pos.end() && p->second > at) {
          Report("lost update", TxnText(t) + " read version " + std::to_string(at) + " of " +
                                    op.key + " and appended " + std::to_string(op.value) +
                                    ", but " + std::to_string(order_[op.key][at]) +
                                    " came in between");
        }
      }
    }
  }

  int Node(size_t t) {
    auto [it, fresh] = node_of_.emplace(t, static_cast<int>(txn_of_.size()));
    if (fresh) {
      txn_of_.push_back(t);
      out_.emplace_back();
    }
    return it->second;
  }
  void AddEdge(size_t from, size_t to, Edge e, const std::string& key) {
    if (from == to) return;
    const int a = Node(from), b = Node(to);
    out_[a].push_back({b, e, key});
    result_.edges++;
  }
  // The transaction that wrote `value` to `key`, if it may have committed.
  std::optional<size_t> WriterOf(const std::string& key, int64_t value) {
    auto w = writers_[key].find(value);
    if (w == writers_[key].end()) return std::nullopt;
    if (h_[w->second.txn].outcome == HistoryTxn::Outcome::kFail) return std::nullopt;
    return w->second.txn;
  }

  void BuildGraph() {
    for (const auto& [key, order] : order_) {
      for (size_t i = 1; i < order.size(); i++) {
        auto a = WriterOf(key, order[i - 1]), b = WriterOf(key, order[i]);
        if (a && b) AddEdge(*a, *b, Edge::kWW, key);
      }
    }
    for (size_t t = 0; t < h_.size(); t++) {
      if (!Committed(t)) continue;
      for (const HistoryOp& op : h_[t].ops) {
        if (op.kind != HistoryOp::Kind::kRead) continue;
        if (!op.list.empty()) {
          if (auto w = WriterOf(op.key, op.list.back())) AddEdge(*w, t, Edge::kWR, op.key);
        }
        const std::vector<int64_t>& order = order_[op.key];
        if (op.list.size() < order.size() &&
            std::equal(op.list.begin(), op.list.end(), order.begin())) {
          if (auto w = WriterOf(op.key, order[op.list.size()])) AddEdge(t, *w, Edge::kRW, op.key);
        }
      }
    }
    result_.committed = 0;
    for (size_t t = 0; t < h_.size(); t++) {
      if (Committed(t) ||
          (h_[t].outcome == HistoryTxn::Outcome::kUnknown && seen_writers_.count(t) != 0)) {
        result_.committed++;
      }
    }
  }

  // Tarjan's strongly connected components, iteratively.
  std::vector<std::vector<int>> Components() {
    const int n = static_cast<int>(out_.size());
    std::vector<int> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::vector<int>> comps;
    int next = 0;
    for (int root = 0; root < n; root++) {
      if (index[root] != -1) continue;
      std::vector<std::pair<int, size_t>> work{{root, 0}};
      index[root] = low[root] = next++;
      stack.push_back(root);
      on_stack[root] = true;
      while (!work.empty()) {
        auto& [v, i] = work.back();
        if (i < out_[v].size()) {
          const int w = out_[v][i++].to;
          if (index[w] == -1) {
            index[w] = low[w] = next++;
            stack.push_back(w);
            on_stack[w] = true;
            work.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        const int done = v;
        work.pop_back();
        if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
        if (low[done] == index[done]) {
          std::vector<int> comp;
          int w;
          do {
            w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            comp.push_back(w);
          } while (w != done);
          if (comp.size() > 1) comps.push_back(std::move(comp));
        }
      }
    }
    return comps;
  }

  // A cycle through edge (a -> b, e0) inside `comp` with no two rw edges
  // next to each other (the cycle closes, so the last edge and e0 are next
  // to each other too), as the list of its edges; empty when there is none.
  struct Step {
    int from;
    int to;
    Edge e;
    std::string key;
  };
  std::vector<Step> ForbiddenCycleThrough(int a, const OutEdge& first, const std::set<int>& comp) {
    // State: (node, whether the edge into it was rw).
    auto id = [](int node, bool rw) { return node * 2 + (rw ? 1 : 0); };
    std::unordered_map<int, std::pair<int, const OutEdge*>> parent;  // state -> (state, edge)
    std::deque<int> queue;
    const int start = id(first.to, first.e == Edge::kRW);
    parent[start] = {-1, &first};
    queue.push_back(start);
    while (!queue.empty()) {
      const int s = queue.front();
      queue.pop_front();
      const int v = s / 2;
      const bool in_rw = s % 2 == 1;
      if (v == a && !(in_rw && first.e == Edge::kRW) && s != start) {
        std::vector<Step> steps;
        for (int cur = s; cur != -1;) {
          const auto& [prev, edge] = parent[cur];
          const int from = prev == -1 ? a : prev / 2;
          steps.push_back({from, cur / 2, edge->e, edge->key});
          cur = prev;
        }
        std::reverse(steps.begin(), steps.end());
        return steps;
      }
      if (v == a && s != start) continue;
      for (const OutEdge& e : out_[v]) {
        if (comp.count(e.to) == 0) continue;
        if (in_rw && e.e == Edge::kRW) continue;
        const int next = id(e.to, e.e == Edge::kRW);
        if (parent.count(next) != 0) continue;
        parent[next] = {s, &e};
        queue.push_back(next);
      }
    }
    return {};
  }

  void FindCycles() {
    for (const std::vector<int>& comp_nodes : Components()) {
      const std::set<int> comp(comp_nodes.begin(), comp_nodes.end());
      std::vector<Step> cycle;
      size_t tried = 0;
      for (int a : comp_nodes) {
        for (const OutEdge& e : out_[a]) {
          if (comp.count(e.to) == 0) continue;
          if (++tried > 2000) break;
          cycle = ForbiddenCycleThrough(a, e, comp);
          if (!cycle.empty()) break;
        }
        if (!cycle.empty() || tried > 2000) break;
      }
      if (cycle.empty()) {
        result_.write_skew_cycles++;
        continue;
      }
      int rw = 0, wr = 0;
      std::string text;
      for (const Step& s : cycle) {
        rw += s.e == Edge::kRW;
        wr += s.e == Edge::kWR;
        text += TxnText(txn_of_[s.from]) + " -" + EdgeName(s.e) + "(" + s.key + ")-> ";
      }
      text += TxnText(txn_of_[cycle.back().to]);
      const std::string type = rw == 0   ? (wr == 0 ? "G0" : "G1c")
                               : rw == 1 ? "G-single"
                                         : "G-nonadjacent";
      Report(type, "cycle of " + std::to_string(comp.size()) + " transactions: " + text);
    }
  }

  const History& h_;
  HistoryCheck result_;
  std::map<std::string, uint64_t> counts_;
  std::map<std::string, std::unordered_map<int64_t, Writer>> writers_;
  std::map<std::pair<size_t, std::string>, int64_t> last_append_;
  std::set<size_t> seen_writers_;
  std::map<std::string, std::vector<int64_t>> order_;
  std::map<std::string, std::unordered_map<int64_t, size_t>> position_;
  std::unordered_map<size_t, int> node_of_;
  std::vector<size_t> txn_of_;
  std::vector<std::vector<OutEdge>> out_;
};

}  // namespace

HistoryCheck CheckSnapshotIsolation(const History& history) { return Checker(history).Run(); }

std::string HistoryCheck::ToString() const {
  std::string s = std::to_string(committed) + " committed transactions, " +
                  std::to_string(reads_checked) + " reads, " + std::to_string(edges) +
                  " dependency edges, " + std::to_string(write_skew_cycles) +
                  " write-skew components (allowed)\n";
  for (const auto& [type, n] : counts) s += "  " + type + ": " + std::to_string(n) + "\n";
  for (const Anomaly& a : anomalies) s += "  " + a.type + ": " + a.description + "\n";
  return s;
}

std::string FormatTxn(const HistoryTxn& txn) {
  std::string s = std::to_string(txn.id);
  s += txn.outcome == HistoryTxn::Outcome::kOk     ? " ok"
       : txn.outcome == HistoryTxn::Outcome::kFail ? " fail"
                                                   : " unknown";
  if (txn.final_read) s += " F";
  for (const HistoryOp& op : txn.ops) {
    if (op.kind == HistoryOp::Kind::kAppend) {
      s += " a " + op.key + " " + std::to_string(op.value) + ";";
    } else {
      s += " r " + op.key + " ";
      for (size_t i = 0; i < op.list.size(); i++) {
        if (i > 0) s += ",";
        s += std::to_string(op.list[i]);
      }
      s += ";";
    }
  }
  return s;
}

std::optional<HistoryTxn> ParseTxn(const std::string& line) {
  std::istringstream in(line);
  HistoryTxn txn;
  std::string outcome;
  if (!(in >> txn.id >> outcome)) return std::nullopt;
  if (outcome == "ok") {
    txn.outcome = HistoryTxn::Outcome::kOk;
  } else if (outcome == "fail") {
    txn.outcome = HistoryTxn::Outcome::kFail;
  } else if (outcome == "unknown") {
    txn.outcome = HistoryTxn::Outcome::kUnknown;
  } else {
    return std::nullopt;
  }
  std::string word;
  while (in >> word) {
    if (word == "F") {
      txn.final_read = true;
      continue;
    }
    HistoryOp op;
    std::string rest;
    if (word == "a") {
      op.kind = HistoryOp::Kind::kAppend;
      if (!(in >> op.key >> rest) || rest.empty() || rest.back() != ';') return std::nullopt;
      rest.pop_back();
      op.value = std::stoll(rest);
    } else if (word == "r") {
      op.kind = HistoryOp::Kind::kRead;
      if (!(in >> op.key >> rest) || rest.empty() || rest.back() != ';') return std::nullopt;
      rest.pop_back();
      size_t pos = 0;
      while (pos < rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos) comma = rest.size();
        op.list.push_back(std::stoll(rest.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    } else {
      return std::nullopt;
    }
    txn.ops.push_back(std::move(op));
  }
  return txn;
}

}  // namespace strata::test
