#include "gc/column_rules.h"

#include <algorithm>

namespace strata::gc {

ColumnCollection CollectColumn(const std::vector<WriteVersion>& versions) {
  ColumnCollection c;
  // The first put or delete (newest first), once found.
  const WriteVersion* first = nullptr;
  uint64_t older = 0;  // versions older than `first`
  for (const WriteVersion& v : versions) {
    if (first == nullptr) {
      switch (v.record.kind) {
        case txn::WriteKind::kRollback:
        case txn::WriteKind::kLock:
          c.write_cells.push_back(v.ts);
          c.versions_dropped++;
          break;
        case txn::WriteKind::kPut:
        case txn::WriteKind::kDelete:
          first = &v;
          break;
      }
      continue;
    }
    older++;
    if (v.record.kind == txn::WriteKind::kPut && !v.record.has_inline_value) {
      c.data_marker = std::max(c.data_marker, v.record.start_ts);
      c.data_dropped++;
    }
  }
  if (first == nullptr) return c;
  if (first->record.kind == txn::WriteKind::kDelete) {
    // The delete goes with everything older, in the same mutation.
    c.write_marker = first->ts;
    c.versions_dropped += older + 1;
  } else if (older > 0) {
    c.write_marker = first->ts - 1;  // first->ts > every older version's >= 1
    c.versions_dropped += older;
  }
  return c;
}

void AddCollection(RowMutation* m, std::string_view column, const ColumnCollection& c) {
  if (c.write_marker != 0) m->DeleteColumn(txn::kWriteFamily, column, c.write_marker);
  for (uint64_t ts : c.write_cells) m->DeleteCell(txn::kWriteFamily, column, ts);
  if (c.data_marker != 0) m->DeleteColumn(txn::kDataFamily, column, c.data_marker);
}

}  // namespace strata::gc
