#include "gc/compaction_filter.h"

#include <algorithm>

#include "txn/records.h"

namespace strata::gc {

void TableSet::Set(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  auto sorted = std::make_shared<const std::vector<std::string>>(std::move(names));
  MutexLock l(&mu_);
  names_ = std::move(sorted);
}

bool TableSet::Contains(std::string_view name) const {
  std::shared_ptr<const std::vector<std::string>> names;
  {
    MutexLock l(&mu_);
    names = names_;
  }
  return names != nullptr && std::binary_search(names->begin(), names->end(), name);
}

void GcCompactionFilter::FilterColumn(const Context& context, std::string_view row,
                                      std::string_view family, std::string_view qualifier,
                                      const std::vector<Version>& versions,
                                      std::vector<Decision>* decisions,
                                      std::vector<std::string>* new_values) {
  if (family != txn::kAckFamily && family != txn::kWriteFamily) return;
  if (!tables_->Contains(context.table)) return;
  if (family == txn::kAckFamily) {
    // Only a column's newest ack is ever read (observer/README.md), and one
    // at least as new as the first here stays: the rest can go in any
    // compaction.
    for (size_t i = 1; i < versions.size(); i++) (*decisions)[i] = Decision::kDrop;
    if (versions.size() > 1) dropped_.fetch_add(versions.size() - 1, std::memory_order_relaxed);
    return;
  }
  if (family != txn::kWriteFamily) return;
  // Acquire: pairs with the collector's store once the locks below the
  // safepoint are resolved (their rollback and commit records written).
  const uint64_t safepoint = ready_->load(std::memory_order_acquire);
  if (safepoint == 0) return;
  // The first put or delete at or below the safepoint, once found.
  bool found = false;
  size_t first_delete = versions.size();  // the first, when it is a delete
  bool all_older_go = true;               // every version older than it goes
  uint64_t dropped = 0;
  for (size_t i = 0; i < versions.size(); i++) {
    if (versions[i].timestamp > safepoint) continue;
    txn::WriteRecord w;
    if (!txn::DecodeWrite(versions[i].value, &w).ok()) {
      // Not ours to judge: keep it, and nothing older that it might hide.
      if (found) all_older_go = false;
      continue;
    }
    const bool record_only = w.kind == txn::WriteKind::kRollback || w.kind == txn::WriteKind::kLock;
    if (!found) {
      if (record_only) {
        (*decisions)[i] = Decision::kDrop;
        dropped++;
      } else {
        found = true;
        if (w.kind == txn::WriteKind::kDelete) first_delete = i;
      }
      continue;
    }
    // Hidden by the first put or delete, which stays in this output.
    if (record_only || w.kind == txn::WriteKind::kDelete ||
        (w.kind == txn::WriteKind::kPut && w.has_inline_value)) {
      (*decisions)[i] = Decision::kDrop;
      dropped++;
    } else {
      all_older_go = false;  // its value is in `data`: the tasks remove both
    }
  }
  if (first_delete < versions.size() && context.bottommost && all_older_go) {
    (*decisions)[first_delete] = Decision::kDrop;
    dropped++;
  }
  if (dropped > 0) dropped_.fetch_add(dropped, std::memory_order_relaxed);
}

}  // namespace strata::gc
