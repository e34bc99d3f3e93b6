// A checker of transaction histories for snapshot isolation, after Elle's
// list-append method: every transaction appends unique values to a few keys
// (each key's value is the list of what was appended to it) and reads
// others. Because an appended value is unique and a read returns the whole
// list, the reads alone reveal each key's order of versions and which
// transaction wrote each one, without trusting the database or its clocks.
//
// What the checker reports (each an Anomaly):
//   * duplicate append: one value appended twice (the workload broke the
//     method's premise);
//   * garbage read: a read saw a value no transaction appended;
//   * duplicate: a read saw one value twice;
//   * aborted read (G1a): a committed transaction saw a value of a
//     transaction that failed;
//   * intermediate read (G1b): it saw a transaction's append to a key but not
//     that transaction's later append to the same key;
//   * incompatible order: two reads of a key that are not one a prefix of
//     the other (the key's versions have no single order);
//   * lost update: two committed transactions read the same version of a
//     key and both appended to it, or a transaction's append does not come
//     right after the version it read (another commit came in between);
//   * lost write: a committed append missing from a read that began after
//     its commit returned (the workload's final read of every key);
//   * cycles in the graph of dependencies between committed transactions
//     (ww: a version follows another's; wr: a read saw another's version;
//     rw: a read missed the version that followed what it saw) that snapshot
//     isolation forbids: those without two rw edges next to each other, named
//     G0 (ww only), G1c (ww and wr), G-single (one rw edge) and G-nonadjacent.
//     A cycle whose every rw edge has another next to it (write skew) is
//     allowed and only counted.
//
// A transaction whose outcome is unknown (a coordinator stopped or killed
// while committing) may have committed: its appends may appear in reads, and
// it then joins the graph as a committed one. Reads count only for committed
// transactions.
#ifndef STRATA_TESTS_TXN_HISTORY_H_
#define STRATA_TESTS_TXN_HISTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::test {

struct HistoryOp {
  enum class Kind { kRead, kAppend };
  Kind kind = Kind::kRead;
  std::string key;
  int64_t value = 0;          // kAppend: the value appended
  std::vector<int64_t> list;  // kRead: the list read
};

struct HistoryTxn {
  enum class Outcome { kOk, kFail, kUnknown };
  uint64_t id = 0;
  Outcome outcome = Outcome::kUnknown;
  std::vector<HistoryOp> ops;
  // A read that began after every other transaction had finished (the
  // workload's final read): a committed append missing from it is lost.
  bool final_read = false;
};

using History = std::vector<HistoryTxn>;

struct Anomaly {
  std::string type;  // "G1a", "G-single", "lost update", ...
  std::string description;
};

struct HistoryCheck {
  std::vector<Anomaly> anomalies;  // at most a few of each type (see counts)
  // How many anomalies of each type were found, "type: n" in type order.
  std::vector<std::pair<std::string, uint64_t>> counts;
  uint64_t committed = 0;  // transactions that committed (or may have, and were seen)
  uint64_t reads_checked = 0;
  uint64_t edges = 0;              // dependency edges between committed transactions
  uint64_t write_skew_cycles = 0;  // components whose only cycles SI allows
  bool ok() const { return anomalies.empty(); }
  // One line per count and anomaly.
  std::string ToString() const;
};

HistoryCheck CheckSnapshotIsolation(const History& history);

// One text line per transaction, and its parse (for histories kept in files
// or sent down a pipe): "<id> ok|fail|unknown [F] r key v,v,...; a key v; ..."
std::string FormatTxn(const HistoryTxn& txn);
std::optional<HistoryTxn> ParseTxn(const std::string& line);

}  // namespace strata::test

#endif  // STRATA_TESTS_TXN_HISTORY_H_
