// The bank workload of the transaction tests (bank_test.cc,
// bank_crash_test.cc): accounts spread over several tables, random transfers
// among them, and snapshot reads that add every balance up. Snapshot
// isolation keeps the total fixed and no balance below zero: a transfer
// writes every balance it read, so two transfers that read the same account
// conflict and one aborts.
//
// An account is a row of one of the bank's tables with one column, "bal",
// holding its balance in decimal. Works on any TransactionDB (the public API
// only). Thread-safe: nothing here holds state.
#ifndef STRATA_TESTS_TXN_BANK_WORKLOAD_H_
#define STRATA_TESTS_TXN_BANK_WORKLOAD_H_

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "strata/status.h"
#include "strata/transaction.h"

namespace strata::test {

inline constexpr std::string_view kBalanceColumn = "bal";

struct Bank {
  // Intentionally copyable.
  std::vector<std::string> tables = {"bank_a", "bank_b"};
  int accounts = 128;
  int64_t initial_balance = 1000;

  int64_t total() const { return accounts * initial_balance; }
  // Accounts go round-robin over the tables, so a transfer often spans two.
  const std::string& TableOf(int account) const { return tables[account % tables.size()]; }
  std::string RowOf(int account) const {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "acct-%04d", account);
    return buf;
  }
};

// One account's part in a transfer.
struct Leg {
  int account = 0;
  int64_t delta = 0;
};

inline Result<int64_t> ParseBalance(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return Status::Corruption("not a balance: \"" + std::string(s) + "\"");
  }
  return v;
}

// Writes every account's initial balance in one transaction.
inline Status Populate(TransactionDB* db, const Bank& bank) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> txn, db->Begin());
  for (int a = 0; a < bank.accounts; ++a) {
    STRATA_RETURN_IF_ERROR(txn->Set(bank.TableOf(a), bank.RowOf(a), kBalanceColumn,
                                    std::to_string(bank.initial_balance)));
  }
  return txn->Commit();
}

// Reads 2 or 3 distinct random accounts in `txn` (with GetForUpdate: in a
// pessimistic transaction it locks them, in any order, so transfers may
// deadlock) and buffers a transfer of a random part of the first one's
// balance to the others; `legs` says what it moved. Commit is the caller's.
// A read error is returned as it is (the transaction is then done for); a
// negative balance is Corruption.
inline Status PrepareTransfer(Transaction* txn, const Bank& bank, Random* rnd,
                              std::vector<Leg>* legs) {
  legs->clear();
  const int n = rnd->OneIn(4) ? 3 : 2;
  while (static_cast<int>(legs->size()) < n) {
    const int a = static_cast<int>(rnd->Uniform(bank.accounts));
    if (std::none_of(legs->begin(), legs->end(), [a](const Leg& l) { return l.account == a; })) {
      legs->push_back(Leg{a, 0});
    }
  }
  std::vector<int64_t> balances;
  for (const Leg& leg : *legs) {
    STRATA_ASSIGN_OR_RETURN(
        std::string v,
        txn->GetForUpdate(bank.TableOf(leg.account), bank.RowOf(leg.account), kBalanceColumn));
    STRATA_ASSIGN_OR_RETURN(int64_t b, ParseBalance(v));
    if (b < 0) {
      return Status::Corruption("account " + bank.RowOf(leg.account) + " has balance " + v +
                                " at start_ts " + std::to_string(txn->start_ts()));
    }
    balances.push_back(b);
  }
  // Move up to a fifth of the first balance, split among the others.
  const int64_t amount = static_cast<int64_t>(rnd->Uniform(balances[0] / 5 + 1));
  int64_t left = amount;
  for (int i = 1; i < n; ++i) {
    const int64_t part = i == n - 1 ? left : static_cast<int64_t>(rnd->Uniform(left + 1));
    (*legs)[i].delta = part;
    left -= part;
  }
  (*legs)[0].delta = -amount;
  for (size_t i = 0; i < legs->size(); ++i) {
    const Leg& leg = (*legs)[i];
    STRATA_RETURN_IF_ERROR(txn->Set(bank.TableOf(leg.account), bank.RowOf(leg.account),
                                    kBalanceColumn, std::to_string(balances[i] + leg.delta)));
  }
  return Status::OK();
}

enum class ReadMode { kScan, kBatchGet };

// Every account's balance in `txn`'s snapshot, read with a scan of each table
// or with one BatchGet per table. Corruption if an account is missing, the
// scan has a row that is not an account, or a balance does not parse.
inline Result<std::vector<int64_t>> ReadBalances(Transaction* txn, const Bank& bank,
                                                 ReadMode mode) {
  std::vector<std::optional<int64_t>> got(bank.accounts);
  for (size_t t = 0; t < bank.tables.size(); ++t) {
    const std::string& table = bank.tables[t];
    std::vector<int> accounts;
    for (int a = static_cast<int>(t); a < bank.accounts;
         a += static_cast<int>(bank.tables.size())) {
      accounts.push_back(a);
    }
    if (mode == ReadMode::kBatchGet) {
      std::vector<Transaction::Key> keys;
      for (int a : accounts) keys.push_back({bank.RowOf(a), std::string(kBalanceColumn)});
      STRATA_ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> values,
                              txn->BatchGet(table, keys));
      if (values.size() != keys.size()) return Status::Corruption("BatchGet lost keys");
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].has_value()) continue;
        STRATA_ASSIGN_OR_RETURN(got[accounts[i]], ParseBalance(*values[i]));
      }
      continue;
    }
    std::map<std::string, int, std::less<>> by_row;
    for (int a : accounts) by_row.emplace(bank.RowOf(a), a);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionIterator> it,
                            txn->Scan(table, "", "", {std::string(kBalanceColumn)}));
    for (; it->Valid(); it->Next()) {
      auto found = by_row.find(it->row());
      if (found == by_row.end() || it->column() != kBalanceColumn) {
        return Status::Corruption("the scan of " + table + " has a stray cell " +
                                  std::string(it->row()) + "/" + std::string(it->column()));
      }
      if (got[found->second].has_value()) {
        return Status::Corruption("the scan of " + table + " has " + found->first + " twice");
      }
      STRATA_ASSIGN_OR_RETURN(got[found->second], ParseBalance(it->value()));
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  std::vector<int64_t> out;
  for (int a = 0; a < bank.accounts; ++a) {
    if (!got[a].has_value()) {
      return Status::Corruption("account " + bank.RowOf(a) + " is missing at start_ts " +
                                std::to_string(txn->start_ts()));
    }
    out.push_back(*got[a]);
  }
  return out;
}

inline int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace strata::test

#endif  // STRATA_TESTS_TXN_BANK_WORKLOAD_H_
