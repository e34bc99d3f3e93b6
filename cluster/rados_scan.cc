// RadosScan (rados_row_store.h): a scan's rows read when it is called, from
// one snapshot of the table.
//
// Each tablet's part of the range is read page after page, every page after
// the first asserting the object's version the first saw (a change starts
// that tablet over). With more than one tablet, each is then checked once
// more, all at once, to still be at the version it was read at; the state
// every tablet had at the moment the last of them was read is then the
// snapshot (tablets that changed are read again, until the deadline).
#include <cerrno>

#include "cluster/rados_keys.h"
#include "cluster/rados_row_store.h"
#include "engine/copied_rows.h"

namespace strata::cluster {
namespace {

// One tablet's part of the scan.
struct TabletRead {
  RadosTablet tablet;
  std::string first_after;  // start_after of the first page
  std::string last_key;     // keys above it belong to rows at or after the end
  bool bounded = false;     // last_key means something
  std::vector<std::pair<std::string, std::string>> entries;
  uint64_t version = 0;
  bool started = false;  // a first page came back
  bool complete = false;
  std::string next_after;
  std::unique_ptr<RadosReadOp> op;
  std::unique_ptr<RadosCall> call;
  size_t page = 0;

  void Restart() {
    entries.clear();
    started = complete = false;
    next_after = first_after;
  }
};

}  // namespace

Result<std::unique_ptr<RowIterator>> RadosScan(std::shared_ptr<RadosStoreState> state,
                                               const ScanSpec& spec) {
  if (!spec.end_row.empty() && spec.start_row > spec.end_row) {
    return Status::InvalidArgument("scan's start_row is after its end_row");
  }
  STRATA_ASSIGN_OR_RETURN(CellFilter filter, state->Resolve(spec.filter));
  std::vector<std::pair<std::string, std::vector<Cell>>> rows;
  if (!spec.end_row.empty() && spec.start_row == spec.end_row) {
    return std::unique_ptr<RowIterator>(
        std::make_unique<engine::CopiedRowIterator>(std::move(rows)));
  }
  const Clock::time_point deadline = state->Deadline();
  const std::string what = "scanning RADOS table '" + state->name() + "'";

  std::vector<TabletRead> reads;
  auto plan = [&] {
    reads.clear();
    const RadosTableInfo map = state->Map();
    for (size_t i = 0; i < map.tablets.size(); i++) {
      const std::string& start = map.tablets[i].start_row;
      const std::string& end = map.TabletEnd(i);
      if (!spec.end_row.empty() && start >= spec.end_row) break;
      if (!end.empty() && end <= spec.start_row) continue;
      TabletRead r;
      r.tablet = map.tablets[i];
      r.first_after = rados_keys::StartAfterForRow(std::max(start, spec.start_row));
      r.bounded = !spec.end_row.empty();
      if (r.bounded) r.last_key = rados_keys::StartAfterForRow(spec.end_row);
      r.Restart();
      reads.push_back(std::move(r));
    }
  };
  plan();

  // Reads every tablet that is not complete, page after page. OK, or
  // kFenced when a tablet's epoch moved on (the map is reloaded).
  bool fenced = false;
  std::string fenced_object;  // one of the fenced tablets, for ReloadMap to repair
  auto read_all = [&]() -> Status {
    for (;;) {
      std::vector<TabletRead*> open;
      for (TabletRead& r : reads) {
        if (!r.complete) open.push_back(&r);
      }
      if (open.empty()) return Status::OK();
      STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(deadline, what));
      for (TabletRead* r : open) {
        r->op = std::make_unique<RadosReadOp>();
        r->op->CmpXattr(kEpochXattr, r->tablet.epoch);
        if (r->started) r->op->AssertVersion(r->version);
        r->page = r->op->GetVals(r->next_after, "", kOmapPage);
        r->call = std::make_unique<RadosCall>();
        r->call->Start(state->rados(), r->tablet.object, r->op.get());
      }
      for (TabletRead* r : open) {
        const int rc = r->call->Wait();
        if (rc == -ERANGE || rc == -EOVERFLOW) {  // changed since the first page
          r->Restart();
          continue;
        }
        if (rc == -ECANCELED || rc == -ENOENT) {  // fenced, or split and removed
          fenced = true;
          fenced_object = r->tablet.object;
          continue;
        }
        if (rc < 0) return RadosError(rc, "scanning tablet object " + r->tablet.object);
        if (!r->started) {
          r->started = true;
          r->version = r->call->version();
        }
        OmapPage& page = r->op->page(r->page);
        bool past_end = false;
        for (auto& [k, v] : page.entries) {
          if (r->bounded && k > r->last_key) {
            past_end = true;
            break;
          }
          r->entries.emplace_back(std::move(k), std::move(v));
        }
        r->complete = past_end || !page.more || page.entries.empty();
        if (!r->complete) r->next_after = r->entries.back().first;
      }
      if (fenced) return Status::OK();
    }
  };

  for (;;) {
    STRATA_RETURN_IF_ERROR(read_all());
    if (fenced) {
      fenced = false;
      STRATA_RETURN_IF_ERROR(state->ReloadMap(fenced_object));
      plan();
      continue;
    }
    if (reads.size() <= 1) break;
    // Every tablet still at the version it was read at: all at once.
    std::vector<std::unique_ptr<RadosReadOp>> ops;
    std::vector<std::unique_ptr<RadosCall>> calls;
    for (TabletRead& r : reads) {
      ops.push_back(std::make_unique<RadosReadOp>());
      ops.back()->CmpXattr(kEpochXattr, r.tablet.epoch);
      ops.back()->AssertVersion(r.version);
      calls.push_back(std::make_unique<RadosCall>());
      calls.back()->Start(state->rados(), r.tablet.object, ops.back().get());
    }
    bool changed = false;
    for (size_t i = 0; i < reads.size(); i++) {
      const int rc = calls[i]->Wait();
      if (rc == -ERANGE || rc == -EOVERFLOW) {
        reads[i].Restart();
        changed = true;
      } else if (rc == -ECANCELED || rc == -ENOENT) {
        fenced = true;
        fenced_object = reads[i].tablet.object;
      } else if (rc < 0) {
        return RadosError(rc, "scanning tablet object " + reads[i].tablet.object);
      }
    }
    if (fenced) {
      fenced = false;
      STRATA_RETURN_IF_ERROR(state->ReloadMap(fenced_object));
      plan();
      continue;
    }
    if (!changed) break;
    STRATA_RETURN_IF_ERROR(RadosStoreState::CheckDeadline(deadline, what));
  }

  // Rows: runs of keys with one row prefix.
  for (const TabletRead& r : reads) {
    size_t i = 0;
    while (i < r.entries.size()) {
      const size_t prefix = rados_keys::RowPrefixLength(r.entries[i].first);
      if (prefix == 0) {
        return Status::Corruption("RADOS table '" + state->name() + "': a key not of this format");
      }
      const std::string_view row_prefix(r.entries[i].first.data(), prefix);
      std::vector<std::pair<std::string_view, std::string_view>> row_entries;
      // Row prefixes are prefix-free: a key that starts with one is of that row.
      for (; i < r.entries.size() && r.entries[i].first.compare(0, prefix, row_prefix) == 0; i++) {
        row_entries.emplace_back(r.entries[i].first, r.entries[i].second);
      }
      std::vector<Cell> cells;
      STRATA_RETURN_IF_ERROR(state->AppendCells(row_entries, filter, &cells));
      if (cells.empty()) continue;
      rados_keys::DecodedKey key;
      rados_keys::DecodeKey(row_entries.front().first, &key);
      rows.emplace_back(std::move(key.row), std::move(cells));
    }
  }
  return std::unique_ptr<RowIterator>(std::make_unique<engine::CopiedRowIterator>(std::move(rows)));
}

}  // namespace strata::cluster
