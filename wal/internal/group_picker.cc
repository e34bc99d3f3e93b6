#include "wal/internal/group_picker.h"

#include <algorithm>

namespace strata::wal {

void PickGroup(const std::vector<GroupCandidate>& queue, size_t max_bytes,
               std::vector<size_t>* picked) {
  picked->clear();
  const size_t n = queue.size();
  size_t bytes = 0;
  for (size_t i = 0; i < std::min<size_t>(n, 2); i++) {
    picked->push_back(i);
    bytes += queue[i].bytes;
  }
  if (n <= 2) return;

  // The rest by key, in the order each key's first write queued.
  std::vector<uint64_t> keys;
  std::vector<std::vector<size_t>> by_key;
  for (size_t i = 2; i < n; i++) {
    auto it = std::find(keys.begin(), keys.end(), queue[i].key);
    if (it == keys.end()) {
      keys.push_back(queue[i].key);
      by_key.emplace_back();
      it = keys.end() - 1;
    }
    by_key[static_cast<size_t>(it - keys.begin())].push_back(i);
  }
  std::vector<size_t> next(keys.size(), 0);  // per key: its first write not yet taken
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t k = 0; k < keys.size(); k++) {
      if (next[k] == by_key[k].size()) continue;
      const size_t i = by_key[k][next[k]];
      if (bytes + queue[i].bytes > max_bytes) {
        next[k] = by_key[k].size();  // done for this group: it takes a prefix of each key
        continue;
      }
      picked->push_back(i);
      bytes += queue[i].bytes;
      next[k]++;
      progress = true;
    }
  }
}

}  // namespace strata::wal
