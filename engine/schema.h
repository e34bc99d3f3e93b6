// Schema: a table's validated schema with the ids the engine uses internally
// (family ids in cell keys, locality-group slots), its manifest encoding, the
// rules for names, and the rules of a schema change (Schema::Alter).
//
// Invariants, for the table's whole life:
//   - A family's id never changes, and an id is never given to another
//     family, even after its family is removed: cell keys and log records
//     carry ids. families() is ordered by id, which is the order cells come
//     back in ("schema order"); new families get ids above every id used.
//   - A locality group's slot (its index in locality_groups()) never
//     changes: files, manifest edits and tablets name groups by slot. A
//     removed group leaves a free slot (empty name) that a later new group
//     may take.
//
// Value types; thread-compatible. Intentionally copyable.
#ifndef STRATA_ENGINE_SCHEMA_H_
#define STRATA_ENGINE_SCHEMA_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "strata/options.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

constexpr size_t kMaxNameLength = 64;
// Families a schema may hold at once.
constexpr size_t kMaxFamilies = 4096;
// Family ids are 16 bits in cell keys; 0 marks row-delete markers.
constexpr uint32_t kMaxFamilyId = UINT16_MAX;
// A locality group's own write buffer size, when it has one.
constexpr uint64_t kMinGroupWriteBuffer = 4096;
constexpr uint64_t kMaxGroupWriteBuffer = uint64_t{1} << 30;

// Names of tenants, tables, families and locality groups: 1 to 64 bytes of
// [A-Za-z0-9_.-]. `what` names the kind of thing in the error message.
Status ValidateName(std::string_view what, std::string_view name);

// A locality group's options (not its name): a known compression with a
// level it takes, block size, bloom bits per key, write buffer size.
// InvalidArgument naming the group when one is out of range.
Status ValidateGroupOptions(const LocalityGroupOptions& group);

struct FamilyInfo {
  std::string name;
  uint16_t id = 0;              // >= 1; id 0 is reserved for row markers
  uint32_t locality_group = 0;  // slot in Schema::locality_groups()
  // The sequence number of the schema change that moved the family to its
  // group (0: it never moved). Log records of the family at or below it were
  // written while it lived in another group, where all of them were flushed
  // (a family moves only when it holds no data), so replay skips them.
  uint64_t moved_at = 0;
  // ColumnFamilyOptions::column_markers_hide_by_timestamp: a DeleteColumn
  // at T hides every version below T, whenever written (row_reader.h).
  bool column_markers_hide_by_timestamp = false;
};

// What a schema change takes away; the engine checks that none of it holds
// data before it applies the change.
struct SchemaChange {
  struct Family {
    std::string name;
    uint16_t id = 0;
    uint32_t old_group = 0;  // the slot it leaves
    bool removed = false;    // removed; otherwise moved to another group
  };
  std::vector<Family> families;
  // Slots of the locality groups removed (no family is left in them).
  std::vector<uint32_t> removed_groups;
};

class Schema {
 public:
  Schema() = default;  // Intentionally copyable.

  // Checks `input` and assigns family ids 1..n in order and group slots.
  static Result<Schema> FromUser(const TableSchema& input);

  // The schema `input` (a whole schema, checked as FromUser checks it)
  // makes of `current`, and in *change what the change takes away. Groups
  // are matched by name; a family keeps its id, and `sequence` becomes the
  // moved_at of each family that changes group. InvalidArgument when the
  // input is bad, when it lists the families the table keeps in another
  // order than theirs, or a new family before one of them, when it changes
  // a kept family's column_markers_hide_by_timestamp, or when the table has
  // used up its family ids. Whether what goes holds data is the caller's to
  // check.
  static Result<Schema> Alter(const Schema& current, const TableSchema& input,
                              uint64_t sequence, SchemaChange* change);

  // Every slot; a free slot (its group removed) has an empty name.
  const std::vector<LocalityGroupOptions>& locality_groups() const { return groups_; }
  bool IsFreeSlot(uint32_t index) const { return groups_[index].name.empty(); }
  // By id, ascending.
  const std::vector<FamilyInfo>& families() const { return families_; }
  // nullptr when there is no such family.
  const FamilyInfo* FindFamily(std::string_view name) const;
  const FamilyInfo* FamilyById(uint16_t id) const {  // inline: once per column of a row walk
    if (id >= by_id_.size() || by_id_[id] == 0) return nullptr;
    return &families_[by_id_[id] - 1];
  }
  // Above every family id the table has ever used.
  uint32_t next_family_id() const { return next_family_id_; }
  // Whether some family lives in the group at `index`.
  bool GroupHasFamilies(uint32_t index) const {
    return index < group_has_families_.size() && group_has_families_[index];
  }

  // The schema as the public API shows it: groups in slot order (free slots
  // left out, "default" listed like any other), families in schema order,
  // each naming its group.
  TableSchema ToUser() const;

  // Manifest encoding; see engine/MANIFEST.md. Schemas that need nothing of
  // version 2 (free slots, id gaps, moved families) are written as version 1,
  // and each later version only when the schema needs what it adds.
  void EncodeTo(std::string* dst) const;
  static Status DecodeFrom(Slice* input, Schema* schema);

  bool operator==(const Schema& other) const;

 private:
  // FromUser; *implicit_default says whether it added the group "default"
  // for families that name no group.
  static Result<Schema> FromUserImpl(const TableSchema& input, bool* implicit_default);
  void BuildIndex();

  std::vector<LocalityGroupOptions> groups_;
  std::vector<FamilyInfo> families_;
  uint32_t next_family_id_ = 1;
  std::map<std::string, size_t, std::less<>> by_name_;
  // by_id_[id] is 1 + the family's index in families_, 0 for no family.
  std::vector<uint16_t> by_id_;
  std::vector<bool> group_has_families_;  // by slot
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_SCHEMA_H_
