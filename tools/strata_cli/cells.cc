// `strata get` and `strata scan`: the cells of a table's rows as
// Table::ReadRow and Table::Scan return them, read from a snapshot of the
// engine directory.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common/coding.h"
#include "output.h"
#include "snapshot.h"

namespace strata::cli {

namespace {

// The snapshot engine and the table a command reads, with --family checked
// against the table's families; an exit code when any cannot be had.
std::optional<int> OpenCells(const Args& args, std::unique_ptr<SnapshotEngine>* engine,
                             Table* table) {
  if (std::optional<int> code = OpenForRead(args, /*transactional=*/false, engine, table)) {
    return code;
  }
  if (!args.family) return std::nullopt;
  Result<TableSchema> schema = table->GetSchema();
  if (!schema.ok()) return (*engine)->ReadFailed(schema.status());
  std::string families;
  for (const ColumnFamilyOptions& f : schema->families) {
    if (f.name == *args.family) return std::nullopt;
    families += (families.empty() ? "" : ", ") + f.name;
  }
  return (*engine)->Refuse(Status::InvalidArgument("table " + args.table + " has no family " +
                                                   *args.family + " (it has " + families + ")"));
}

// One cell: a JSON object, or a line "<row> <family>:<qualifier> @<ts> <value>".
void ShowCell(std::string_view row, const CellView& c, bool hex, JsonWriter* json) {
  if (json != nullptr) {
    json->BeginObject();
    json->Bytes("family", c.family, false);
    json->Bytes("qualifier", c.qualifier, hex);
    json->Number("timestamp", c.timestamp);
    json->Bytes("value", c.value, hex);
    json->End();
    return;
  }
  std::printf("%s %s:%s @%" PRIu64 " %s\n", ShowBytes(row, hex).c_str(),
              EscapeBytes(c.family).c_str(), ShowBytes(c.qualifier, hex).c_str(), c.timestamp,
              ShowBytes(c.value, hex).c_str());
}

}  // namespace

int CmdGet(const Args& args) {
  std::unique_ptr<SnapshotEngine> engine;
  Table table;
  if (std::optional<int> code = OpenCells(args, &engine, &table)) return *code;
  RowFilter filter;
  if (args.family && args.column) {
    filter.columns = {{*args.family, *args.column}};
  } else if (args.family) {
    filter.families = {*args.family};
  }
  filter.max_versions = args.versions;
  Result<std::vector<Cell>> cells = table.ReadRow(ReadOptions(), args.row, filter);
  if (!cells.ok()) return engine->ReadFailed(cells.status());
  std::unique_ptr<JsonWriter> json;
  if (args.json) json = std::make_unique<JsonWriter>(stdout);
  BeginTableOutput(args, json.get());
  if (json != nullptr) {
    json->Bytes("row", args.row, args.hex);
    json->BeginArray("cells");
  }
  uint64_t shown = 0;
  for (const Cell& c : *cells) {
    // --column without --family: that qualifier in every family.
    if (args.column && c.qualifier != *args.column) continue;
    ShowCell(args.row, CellView{c.family, c.qualifier, c.timestamp, c.value}, args.hex, json.get());
    shown++;
  }
  if (json != nullptr) {
    json->End();
    json->Number("cell_count", shown);
    json->End();
  } else {
    std::printf("%s\n", Count(shown, "cell", "cells").c_str());
  }
  if (std::optional<int> code = engine->Close()) return *code;
  return kExitOk;
}

int CmdScan(const Args& args) {
  std::unique_ptr<SnapshotEngine> engine;
  Table table;
  if (std::optional<int> code = OpenCells(args, &engine, &table)) return *code;
  ScanSpec spec;
  spec.start_row = args.start_row;
  spec.end_row = args.end_row;
  if (args.family) spec.filter.families = {*args.family};
  spec.filter.max_versions = args.versions;
  Result<std::unique_ptr<RowIterator>> it = table.Scan(ReadOptions(), spec);
  if (!it.ok()) return engine->ReadFailed(it.status());
  std::unique_ptr<JsonWriter> json;
  if (args.json) json = std::make_unique<JsonWriter>(stdout);
  BeginTableOutput(args, json.get());
  if (json != nullptr) {
    json->Bytes("start_row", args.start_row, args.hex);
    json->Bytes("end_row", args.end_row, args.hex);
    json->BeginArray("rows");
  }
  uint64_t rows = 0, cells = 0;
  bool limited = false;
  for (; (*it)->Valid(); (*it)->Next()) {
    if (args.limit != 0 && rows == args.limit) {
      limited = true;
      break;
    }
    rows++;
    if (json != nullptr) {
      json->BeginObject();
      json->Bytes("row", (*it)->row(), args.hex);
      json->BeginArray("cells");
    }
    for (const CellView& c : (*it)->cell_views()) {
      ShowCell((*it)->row(), c, args.hex, json.get());
      cells++;
    }
    if (json != nullptr) {
      json->End();
      json->End();
    }
  }
  if (!(*it)->status().ok()) return engine->ReadFailed((*it)->status(), json.get());
  if (json != nullptr) {
    json->End();
    json->Number("row_count", rows);
    json->Number("cell_count", cells);
    json->Bool("limited", limited);
    json->End();
  } else {
    std::printf("%s in %s%s\n", Count(cells, "cell", "cells").c_str(),
                Count(rows, "row", "rows").c_str(),
                limited ? " (stopped at --limit; more rows follow)" : "");
  }
  it->reset();  // before the engine closes
  if (std::optional<int> code = engine->Close()) return *code;
  return kExitOk;
}

}  // namespace strata::cli
