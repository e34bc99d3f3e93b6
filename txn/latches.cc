#include "txn/latches.h"

#include <string>

namespace strata::txn {

bool Latches::TryAcquire(const std::vector<TxnKey>& keys) {
  MutexLock l(&mu_);
  for (const TxnKey& k : keys) {
    if (held_.count(k) != 0) return false;
  }
  for (const TxnKey& k : keys) held_.emplace(k, 0);
  held_count_.fetch_add(keys.size());
  return true;
}

void Latches::SetCommitTs(const std::vector<TxnKey>& keys, uint64_t commit_ts) {
  MutexLock l(&mu_);
  for (const TxnKey& k : keys) held_[k] = commit_ts;
}

void Latches::Release(const std::vector<TxnKey>& keys) {
  MutexLock l(&mu_);
  for (const TxnKey& k : keys) held_.erase(k);
  held_count_.fetch_sub(keys.size());
  released_.SignalAll();
}

void Latches::WaitForKey(const TxnKey& key, uint64_t start_ts) {
  if (held_count_.load() == 0) return;
  MutexLock l(&mu_);
  for (;;) {
    auto it = held_.find(key);
    if (it == held_.end() || !MustWait(it->second, start_ts)) return;
    released_.Wait();
  }
}

void Latches::WaitForRange(std::string_view table, std::string_view start_row,
                           std::string_view end_row, uint64_t start_ts) {
  if (held_count_.load() == 0) return;
  MutexLock l(&mu_);
  for (;;) {
    bool wait = false;
    for (auto it = held_.lower_bound(TxnKey{std::string(table), std::string(start_row), ""});
         it != held_.end() && it->first.table == table &&
         (end_row.empty() || it->first.row < end_row);
         ++it) {
      if (MustWait(it->second, start_ts)) {
        wait = true;
        break;
      }
    }
    if (!wait) return;
    released_.Wait();
  }
}

}  // namespace strata::txn
