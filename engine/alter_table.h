// Schema changes (Tenant::AlterTable): what the engine checks before a
// change that takes families or groups away. See "Schema changes" in
// engine/README.md for the rules and engine/schema.h for the ids.
//
// The steps (EngineCore::AlterTable), one schema change at a time:
//   1. With the close gate held exclusively (no call in flight: no write sits
//      between the schema it checked and its apply), work out the new schema
//      (Schema::Alter) and check that nothing it takes away holds data
//      (CheckNothingLost).
//   2. Sync the log, so every sequence up to the change is durable in it and
//      later writes get higher ones (families that move skip older records
//      on replay), then record one manifest edit (tag 14), add the new group
//      slots to every tablet and swap the schema in (VersionSet::AlterTable).
//      Each group's `resident` flag follows its in_memory option.
//   3. Without the gate, make the files of groups that turned in_memory
//      resident, and let go of those of groups that turned it off.
// A crash before the edit is durable leaves the old schema, after it the new.
//
// Thread-safe: reads immutable views; readers come from the table cache.
#ifndef STRATA_ENGINE_ALTER_TABLE_H_
#define STRATA_ENGINE_ALTER_TABLE_H_

#include "engine/schema.h"
#include "engine/tablet.h"
#include "sstable/table_cache.h"
#include "strata/status.h"

namespace strata::engine {

// FailedPrecondition naming the family or group when something `change`
// takes away from `table` (whose schema is `current`) holds data in any
// tablet: a family removed or moved, or a group removed. Readers come from
// `tables`. REQUIRES: the close gate held exclusively (the tablet list and
// the memtables stay still).
Status CheckNothingLost(const TableState& table, const Schema& current, const SchemaChange& change,
                        sstable::TableCache* tables);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ALTER_TABLE_H_
