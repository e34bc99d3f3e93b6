// Schema: a table's validated schema with the ids the engine uses internally
// (family ids in cell keys, locality-group indexes), its manifest encoding,
// and the rules for names.
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

// Names of tenants, tables, families and locality groups: 1 to 64 bytes of
// [A-Za-z0-9_.-]. `what` names the kind of thing in the error message.
Status ValidateName(std::string_view what, std::string_view name);

struct FamilyInfo {
  std::string name;
  uint16_t id = 0;           // >= 1; id 0 is reserved for row markers
  uint32_t locality_group = 0;  // index into Schema::locality_groups
};

class Schema {
 public:
  Schema() = default;  // Intentionally copyable.

  // Checks `input` and assigns family ids 1..n in order and group indexes.
  static Result<Schema> FromUser(const TableSchema& input);

  const std::vector<LocalityGroupOptions>& locality_groups() const { return groups_; }
  const std::vector<FamilyInfo>& families() const { return families_; }
  // nullptr when there is no such family.
  const FamilyInfo* FindFamily(std::string_view name) const;
  const FamilyInfo* FamilyById(uint16_t id) const;

  // Manifest encoding; see engine/MANIFEST.md.
  void EncodeTo(std::string* dst) const;
  static Status DecodeFrom(Slice* input, Schema* schema);

 private:
  void BuildIndex();

  std::vector<LocalityGroupOptions> groups_;
  std::vector<FamilyInfo> families_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_SCHEMA_H_
