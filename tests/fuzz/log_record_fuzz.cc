// Fuzzes the decoder of the engine's log record payloads
// (engine/log_record.h, engine/LOG_RECORD.md). A payload of rows that decodes
// must build again, through LogRecordBuilder, into the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/log_record.h"
#include "fuzz_check.h"

using namespace strata;
using namespace strata::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Slice payload(reinterpret_cast<const char*>(data), size);
  std::vector<LoggedRow> rows;
  LogRecordKind kind;
  if (!DecodeLogRecord(payload, &rows, &kind).ok()) return 0;
  if (kind != LogRecordKind::kRows) return 0;
  LogRecordBuilder builder;
  for (const LoggedRow& row : rows) builder.AddRow(row.tablet_id, row.row, row.entries);
  const std::string rebuilt = builder.Finish().ToString();
  std::vector<LoggedRow> again;
  LogRecordKind again_kind;
  FUZZ_CHECK(DecodeLogRecord(rebuilt, &again, &again_kind).ok());
  FUZZ_CHECK(again_kind == LogRecordKind::kRows);
  FUZZ_CHECK(again.size() == rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    FUZZ_CHECK(again[i].tablet_id == rows[i].tablet_id);
    FUZZ_CHECK(again[i].row == rows[i].row);
    FUZZ_CHECK(again[i].entries.size() == rows[i].entries.size());
  }
  return 0;
}
