#include "txn/pessimistic_locks.h"

#include <algorithm>
#include <chrono>

namespace strata::txn {

std::string PessimisticLocks::FindCycle(const TxnKey& key, uint64_t owner) const {
  std::string cycle = "transaction " + std::to_string(owner) + " waits for " + key.ToString();
  TxnKey at = key;
  // Each waiting transaction waits for one key, so the chain visits each at
  // most once before it ends or comes back.
  for (size_t steps = 0; steps <= waiting_.size(); ++steps) {
    auto entry = keys_.find(at);
    if (entry == keys_.end()) return {};
    const uint64_t holder = entry->second.holder;
    cycle += ", held by transaction " + std::to_string(holder);
    if (holder == owner) return cycle;
    auto w = waiting_.find(holder);
    if (w == waiting_.end()) return {};
    at = w->second;
    cycle += ", which waits for " + at.ToString();
  }
  return {};
}

PessimisticLocks::Outcome PessimisticLocks::Acquire(const TxnKey& key, uint64_t owner,
                                                    uint64_t timeout_micros) {
  MutexLock l(&mu_);
  auto [it, inserted] = keys_.try_emplace(key);
  Entry& entry = it->second;
  if (inserted || entry.holder == owner) {
    entry.holder = owner;
    return {};
  }
  Outcome out;
  out.holder = entry.holder;
  if (timeout_micros == 0) {
    out.kind = Outcome::Kind::kTimeout;
    return out;
  }
  std::string cycle = FindCycle(key, owner);
  if (!cycle.empty()) {
    out.kind = Outcome::Kind::kDeadlock;
    out.cycle = std::move(cycle);
    return out;
  }
  out.waited = true;
  Waiter waiter(&mu_, owner);
  entry.queue.push_back(&waiter);
  waiting_[owner] = key;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_micros);
  while (!waiter.granted) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    waiter.granted_cv.WaitFor(left);
  }
  waiting_.erase(owner);
  if (waiter.granted) {
    Outcome granted;
    granted.waited = true;
    return granted;
  }
  // Timed out: leave the queue. The entry still has its holder (a release
  // with this waiter first in the queue would have granted it).
  Entry& now = keys_.at(key);
  now.queue.erase(std::find(now.queue.begin(), now.queue.end(), &waiter));
  out.kind = Outcome::Kind::kTimeout;
  out.holder = now.holder;
  return out;
}

void PessimisticLocks::Release(uint64_t owner, const std::vector<TxnKey>& keys) {
  MutexLock l(&mu_);
  for (const TxnKey& key : keys) {
    auto it = keys_.find(key);
    if (it == keys_.end() || it->second.holder != owner) continue;
    Entry& entry = it->second;
    if (entry.queue.empty()) {
      keys_.erase(it);
      continue;
    }
    Waiter* next = entry.queue.front();
    entry.queue.pop_front();
    entry.holder = next->owner;
    next->granted = true;
    next->granted_cv.Signal();
  }
}

size_t PessimisticLocks::held() const {
  MutexLock l(&mu_);
  return keys_.size();
}

size_t PessimisticLocks::waiting() const {
  MutexLock l(&mu_);
  return waiting_.size();
}

}  // namespace strata::txn
