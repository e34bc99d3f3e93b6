#include "engine/prefetch_predictor.h"

#include <algorithm>
#include <utility>

#include "common/hash.h"

namespace strata::engine {

size_t ColumnHash::operator()(ColumnRef c) const {
  return static_cast<size_t>(Hash64(c.qualifier.data(), c.qualifier.size(), c.family));
}

const std::vector<ColumnId>& PrefetchPredictor::Snapshot::Predict(ColumnRef column) const {
  static const std::vector<ColumnId> kNone;
  auto it = predictions_.find(column);
  return it == predictions_.end() ? kNone : it->second;
}

PrefetchPredictor::PrefetchPredictor(const Options& options)
    : options_(options), snapshot_(std::make_shared<Snapshot>()) {}

std::shared_ptr<const PrefetchPredictor::Snapshot> PrefetchPredictor::snapshot() const {
  MutexLock l(&snapshot_mu_);
  return snapshot_;
}

bool PrefetchPredictor::Record(const std::vector<std::vector<ColumnRef>>& rows) {
  if (rows.empty()) return true;
  if (!mu_.TryLock()) return false;
  for (const auto& row : rows) RecordRow(row);
  if (since_refresh_ >= options_.refresh_interval) RefreshLocked();
  mu_.Unlock();
  return true;
}

void PrefetchPredictor::Refresh() {
  MutexLock l(&mu_);
  RefreshLocked();
}

size_t PrefetchPredictor::tracked_columns() const {
  MutexLock l(&mu_);
  return capacity_ - free_slots_.size();
}

void PrefetchPredictor::RecordRow(const std::vector<ColumnRef>& row) {
  if (row.empty()) return;
  std::vector<uint32_t> ids;
  ids.reserve(std::min(row.size(), options_.max_columns_per_record));
  for (const ColumnRef& c : row) {
    if (ids.size() >= options_.max_columns_per_record) break;
    const int64_t slot = SlotOf(c);
    if (slot < 0 || std::find(ids.begin(), ids.end(), slot) != ids.end()) continue;
    ids.push_back(static_cast<uint32_t>(slot));
  }
  for (uint32_t a : ids) {
    slots_[a].reads++;
    for (uint32_t b : ids) {
      if (a != b) Together(a, b)++;
    }
  }
  since_refresh_++;
  if (++since_decay_ >= options_.decay_interval) Decay();
}

int64_t PrefetchPredictor::SlotOf(ColumnRef column) {
  auto it = slot_of_.find(column);
  if (it != slot_of_.end()) return it->second;
  if (free_slots_.empty() && !Grow()) return -1;
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  Slot& s = slots_[slot];
  s.column = ColumnId{column.family, std::string(column.qualifier)};
  s.reads = 0;
  s.used = true;
  slot_of_.emplace(s.column, slot);
  return slot;
}

bool PrefetchPredictor::Grow() {
  const size_t limit = std::max<size_t>(options_.max_columns, 1);
  const size_t grown = std::min(capacity_ == 0 ? size_t{8} : capacity_ * 2, limit);
  if (grown <= capacity_) return false;
  std::vector<uint32_t> together(grown * grown, 0);
  for (size_t a = 0; a < capacity_; a++) {
    std::copy_n(&together_[a * capacity_], capacity_, &together[a * grown]);
  }
  together_ = std::move(together);
  slots_.resize(grown);
  // Lowest slot last, so slots are handed out in order.
  for (size_t s = grown; s > capacity_; s--) free_slots_.push_back(static_cast<uint32_t>(s - 1));
  capacity_ = grown;
  return true;
}

void PrefetchPredictor::Decay() {
  since_decay_ = 0;
  for (uint32_t& t : together_) t >>= 1;
  for (size_t s = 0; s < capacity_; s++) {
    Slot& slot = slots_[s];
    if (!slot.used) continue;
    slot.reads >>= 1;
    if (slot.reads != 0) continue;
    // together(s, *) <= reads(s) == 0: the slot is clean for its next column.
    slot_of_.erase(slot.column);
    slot.column = ColumnId();
    slot.used = false;
    free_slots_.push_back(static_cast<uint32_t>(s));
  }
}

void PrefetchPredictor::RefreshLocked() {
  since_refresh_ = 0;
  auto snapshot = std::make_shared<Snapshot>();
  std::vector<std::pair<uint32_t, uint32_t>> candidates;  // (together, slot)
  for (size_t a = 0; a < capacity_; a++) {
    const Slot& slot = slots_[a];
    if (!slot.used || slot.reads < options_.min_reads) continue;
    const double needed = options_.threshold * slot.reads;
    candidates.clear();
    for (size_t b = 0; b < capacity_; b++) {
      const uint32_t t = Together(a, b);
      if (b != a && t > 0 && t >= needed) candidates.emplace_back(t, static_cast<uint32_t>(b));
    }
    if (candidates.empty()) continue;
    std::sort(candidates.begin(), candidates.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    if (candidates.size() > options_.max_predicted) candidates.resize(options_.max_predicted);
    std::vector<ColumnId> predicted;
    predicted.reserve(candidates.size());
    for (const auto& [t, b] : candidates) predicted.push_back(slots_[b].column);
    snapshot->predictions_.emplace(slot.column, std::move(predicted));
  }
  std::shared_ptr<const Snapshot> old;
  {
    MutexLock l(&snapshot_mu_);
    old = std::move(snapshot_);
    snapshot_ = std::move(snapshot);
  }
  // `old` is freed here, outside the lock, unless a reader still holds it.
}

}  // namespace strata::engine
