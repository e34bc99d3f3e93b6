// `strata notifications`: a transactional table's pending notifications and
// observers' acks (observer/README.md), read from a snapshot of the engine
// directory.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common/coding.h"
#include "output.h"
#include "snapshot.h"
#include "txn/records.h"

namespace strata::cli {

int CmdNotifications(const Args& args) {
  std::unique_ptr<SnapshotEngine> engine;
  Table table;
  if (auto code = OpenForRead(args, /*transactional=*/true, &engine, &table)) return *code;
  ScanSpec spec;
  spec.filter.families = {std::string(txn::kNotifyFamily), std::string(txn::kAckFamily)};
  Result<std::unique_ptr<RowIterator>> it = table.Scan(ReadOptions(), spec);
  if (!it.ok()) return engine->ReadFailed(it.status());
  std::unique_ptr<JsonWriter> json;
  if (args.json) json = std::make_unique<JsonWriter>(stdout);
  BeginTableOutput(args, json.get());
  if (json != nullptr) json->BeginArray("cells");
  uint64_t cells = 0, notifications = 0, acks = 0, shown = 0;
  uint64_t oldest = UINT64_MAX;
  for (; (*it)->Valid(); (*it)->Next()) {
    // Per column: its notifications (newest first) and newest ack.
    std::map<std::string, std::pair<std::vector<uint64_t>, uint64_t>> columns;
    for (const Cell& c : (*it)->cells()) {
      auto& [notes, ack] = columns[c.qualifier];
      if (c.family == txn::kNotifyFamily) {
        notes.push_back(c.timestamp);
      } else if (ack == 0) {
        ack = c.timestamp;
        acks++;
      }
    }
    for (const auto& [column, v] : columns) {
      const auto& [notes, ack] = v;
      if (notes.empty()) continue;
      cells++;
      notifications += notes.size();
      oldest = std::min(oldest, notes.back());
      if (shown >= args.rows) continue;
      shown++;
      if (json != nullptr) {
        json->BeginObject();
        json->Bytes("row", (*it)->row(), args.hex);
        json->Bytes("column", column, args.hex);
        json->Number("pending", notes.size());
        json->Timestamp("newest", notes.front());
        json->Timestamp("oldest", notes.back());
        if (ack == 0) {
          json->Null("ack");
        } else {
          json->Timestamp("ack", ack);
          json->Bool("ack_is_newer", ack > notes.front());
        }
        json->End();
        continue;
      }
      std::printf("  row %s column %s: %zu pending, newest %" PRIu64 " (%s)",
                  ShowBytes((*it)->row(), args.hex).c_str(), ShowBytes(column, args.hex).c_str(),
                  notes.size(), notes.front(), WallTime(notes.front()).c_str());
      if (ack != 0) {
        std::printf(", ack %" PRIu64 "%s", ack,
                    ack > notes.front() ? " (newer: a worker erases them without a run)" : "");
      }
      std::printf("\n");
    }
  }
  if (!(*it)->status().ok()) return engine->ReadFailed((*it)->status(), json.get());
  if (json != nullptr) {
    json->End();
    json->Number("more_cells", cells - shown);
    json->Number("notifications", notifications);
    json->Number("cells_pending", cells);
    if (cells == 0) {
      json->Null("oldest");
    } else {
      json->Timestamp("oldest", oldest);
    }
    json->Number("cells_with_ack", acks);
    json->End();
  } else {
    if (shown < cells) std::printf("  ... %" PRIu64 " more cells\n", cells - shown);
    std::printf("%" PRIu64 " notifications pending in %" PRIu64 " cells", notifications, cells);
    if (cells > 0) std::printf(", the oldest from %s", WallTime(oldest).c_str());
    std::printf("; %" PRIu64 " cells with an ack\n", acks);
  }
  it->reset();  // before the engine closes
  if (std::optional<int> code = engine->Close()) return *code;
  return kExitOk;
}

}  // namespace strata::cli
