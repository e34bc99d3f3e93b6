#include "engine/schema.h"

#include <algorithm>
#include <set>

#include "common/coding.h"

namespace strata::engine {

namespace {

// A family's flags in a schema_v4 (engine/MANIFEST.md).
// DO NOT CHANGE: stored on disk.
constexpr uint32_t kFamilyHidesByTimestamp = 1;  // column_markers_hide_by_timestamp
constexpr uint32_t kKnownFamilyFlags = kFamilyHidesByTimestamp;

uint32_t FamilyFlags(const FamilyInfo& f) {
  return f.column_markers_hide_by_timestamp ? kFamilyHidesByTimestamp : 0;
}

}  // namespace

Status ValidateName(std::string_view what, std::string_view name) {
  if (name.empty()) return Status::InvalidArgument(std::string(what) + " name is empty");
  if (name.size() > kMaxNameLength) {
    return Status::InvalidArgument(std::string(what) + " name is " + std::to_string(name.size()) +
                                   " bytes; the limit is " + std::to_string(kMaxNameLength));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) {
      return Status::InvalidArgument(std::string(what) + " name '" + EscapePrefix(name) +
                                     "' has a byte outside [A-Za-z0-9_.-]");
    }
  }
  return Status::OK();
}

Status ValidateGroupOptions(const LocalityGroupOptions& g) {
  if (g.compression != Compression::kNone && g.compression != Compression::kZstd) {
    return Status::InvalidArgument("locality group '" + g.name + "': unknown compression");
  }
  if (g.compression == Compression::kZstd &&
      (g.compression_level < 1 || g.compression_level > 22)) {
    return Status::InvalidArgument("locality group '" + g.name + "': zstd level " +
                                   std::to_string(g.compression_level) + " is outside 1..22");
  }
  if (g.block_size < 256 || g.block_size > (64u << 20)) {
    return Status::InvalidArgument("locality group '" + g.name + "': block size " +
                                   std::to_string(g.block_size) + " is outside 256..64 MiB");
  }
  if (g.bloom_bits_per_key < 0 || g.bloom_bits_per_key > 64) {
    return Status::InvalidArgument("locality group '" + g.name + "': bloom bits per key " +
                                   std::to_string(g.bloom_bits_per_key) + " is outside 0..64");
  }
  if (g.write_buffer_size != 0 &&
      (g.write_buffer_size < kMinGroupWriteBuffer || g.write_buffer_size > kMaxGroupWriteBuffer)) {
    return Status::InvalidArgument("locality group '" + g.name + "': write buffer size " +
                                   std::to_string(g.write_buffer_size) +
                                   " is neither 0 nor within 4 KiB..1 GiB");
  }
  return Status::OK();
}

Result<Schema> Schema::FromUser(const TableSchema& input) {
  bool implicit_default = false;
  return FromUserImpl(input, &implicit_default);
}

Result<Schema> Schema::FromUserImpl(const TableSchema& input, bool* implicit_default) {
  Schema s;
  *implicit_default = false;
  if (input.families.empty()) return Status::InvalidArgument("schema has no column families");
  if (input.families.size() > kMaxFamilies) {
    return Status::InvalidArgument("schema has " + std::to_string(input.families.size()) +
                                   " families; the limit is " + std::to_string(kMaxFamilies));
  }
  std::set<std::string, std::less<>> group_names;
  for (const auto& g : input.locality_groups) {
    STRATA_RETURN_IF_ERROR(ValidateName("locality group", g.name));
    if (!group_names.insert(g.name).second) {
      return Status::InvalidArgument("duplicate locality group '" + g.name + "'");
    }
    STRATA_RETURN_IF_ERROR(ValidateGroupOptions(g));
    s.groups_.push_back(g);
  }
  std::set<std::string, std::less<>> family_names;
  for (const auto& f : input.families) {
    STRATA_RETURN_IF_ERROR(ValidateName("column family", f.name));
    if (!family_names.insert(f.name).second) {
      return Status::InvalidArgument("duplicate column family '" + f.name + "'");
    }
    std::string group = f.locality_group.empty() ? "default" : f.locality_group;
    if (group_names.count(group) == 0) {
      if (!f.locality_group.empty()) {
        return Status::InvalidArgument("column family '" + f.name +
                                       "' names unknown locality group '" + group + "'");
      }
      LocalityGroupOptions def;
      def.name = "default";
      s.groups_.push_back(def);
      group_names.insert(group);
      *implicit_default = true;
    }
    uint32_t index = 0;
    while (s.groups_[index].name != group) index++;
    s.families_.push_back(FamilyInfo{f.name, static_cast<uint16_t>(s.families_.size() + 1), index,
                                     0, f.column_markers_hide_by_timestamp});
  }
  s.next_family_id_ = static_cast<uint32_t>(s.families_.size() + 1);
  s.BuildIndex();
  return s;
}

Result<Schema> Schema::Alter(const Schema& current, const TableSchema& input, uint64_t sequence,
                             SchemaChange* change) {
  *change = SchemaChange();
  bool implicit_default = false;
  Result<Schema> resolved = FromUserImpl(input, &implicit_default);
  if (!resolved.ok()) return resolved.status();
  const Schema& in = *resolved;

  // Groups, by name: a group the table has keeps its slot and takes the new
  // options; a new one takes a slot that was free before this change, or a
  // new slot at the end; a group left out frees its slot.
  Schema out;
  out.groups_ = current.groups_;
  std::vector<uint32_t> slot_of(in.groups_.size());
  std::vector<bool> kept(current.groups_.size(), false);
  std::vector<size_t> added;  // indexes into in.groups_
  for (size_t i = 0; i < in.groups_.size(); i++) {
    const LocalityGroupOptions& g = in.groups_[i];
    auto it = std::find_if(current.groups_.begin(), current.groups_.end(),
                           [&](const LocalityGroupOptions& c) { return c.name == g.name; });
    if (it == current.groups_.end()) {
      added.push_back(i);
      continue;
    }
    const uint32_t slot = static_cast<uint32_t>(it - current.groups_.begin());
    slot_of[i] = slot;
    kept[slot] = true;
    // A "default" group the input only implies keeps the options it has.
    if (!(implicit_default && g.name == "default")) out.groups_[slot] = g;
  }
  for (uint32_t slot = 0; slot < current.groups_.size(); slot++) {
    if (!current.IsFreeSlot(slot) && !kept[slot]) {
      out.groups_[slot] = LocalityGroupOptions();
      out.groups_[slot].name.clear();
      change->removed_groups.push_back(slot);
    }
  }
  for (size_t i : added) {
    // Slots freed by this very change stay free until the next one.
    auto reusable = [&](uint32_t slot) {
      return slot < current.groups_.size() && current.IsFreeSlot(slot) && out.IsFreeSlot(slot);
    };
    uint32_t slot = 0;
    while (slot < out.groups_.size() && !reusable(slot)) slot++;
    if (slot == out.groups_.size()) out.groups_.emplace_back();
    out.groups_[slot] = in.groups_[i];
    slot_of[i] = slot;
  }

  // Families, by name: the ones the table keeps keep their ids (so their
  // order) and must be listed in that order; new ones come after them.
  out.next_family_id_ = current.next_family_id_;
  const FamilyInfo* last_kept = nullptr;
  const FamilyInfo* first_new = nullptr;
  for (const FamilyInfo& f : in.families_) {
    const uint32_t slot = slot_of[f.locality_group];
    const FamilyInfo* had = current.FindFamily(f.name);
    if (had == nullptr) {
      if (out.next_family_id_ > kMaxFamilyId) {
        return Status::InvalidArgument("cannot add column family '" + f.name +
                                       "': the table has used all " +
                                       std::to_string(kMaxFamilyId) + " family ids");
      }
      if (first_new == nullptr) first_new = &f;
      out.families_.push_back(FamilyInfo{f.name, static_cast<uint16_t>(out.next_family_id_++), slot,
                                         0, f.column_markers_hide_by_timestamp});
      continue;
    }
    // The family's data was written under its rule, and a reader or
    // compaction would read it under the other.
    if (f.column_markers_hide_by_timestamp != had->column_markers_hide_by_timestamp) {
      return Status::InvalidArgument("column family '" + f.name +
                                     "': column_markers_hide_by_timestamp cannot change (it is " +
                                     (had->column_markers_hide_by_timestamp ? "on" : "off") +
                                     "); a family keeps it from its creation");
    }
    if (first_new != nullptr) {
      return Status::InvalidArgument(
          "column family '" + f.name + "' is listed after the new family '" + first_new->name +
          "': the families the table has keep their order, and new ones go after them");
    }
    if (last_kept != nullptr && had->id < last_kept->id) {
      return Status::InvalidArgument("column family '" + f.name + "' is listed after '" +
                                     last_kept->name +
                                     "', which comes after it in the table: families cannot "
                                     "be reordered");
    }
    last_kept = had;
    FamilyInfo info = *had;
    info.locality_group = slot;
    if (slot != had->locality_group) {
      info.moved_at = sequence;
      change->families.push_back({had->name, had->id, had->locality_group, /*removed=*/false});
    }
    out.families_.push_back(std::move(info));
  }
  for (const FamilyInfo& f : current.families_) {
    if (in.FindFamily(f.name) == nullptr) {
      change->families.push_back({f.name, f.id, f.locality_group, /*removed=*/true});
    }
  }
  out.BuildIndex();
  return out;
}

void Schema::BuildIndex() {
  by_name_.clear();
  by_id_.assign(next_family_id_, 0);
  group_has_families_.assign(groups_.size(), false);
  for (size_t i = 0; i < families_.size(); i++) {
    by_name_[families_[i].name] = i;
    by_id_[families_[i].id] = static_cast<uint16_t>(i + 1);
    group_has_families_[families_[i].locality_group] = true;
  }
}

const FamilyInfo* Schema::FindFamily(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &families_[it->second];
}

TableSchema Schema::ToUser() const {
  TableSchema s;
  for (const auto& g : groups_) {
    if (!g.name.empty()) s.locality_groups.push_back(g);
  }
  for (const auto& f : families_) {
    s.families.push_back({.name = f.name,
                          .locality_group = groups_[f.locality_group].name,
                          .column_markers_hide_by_timestamp = f.column_markers_hide_by_timestamp});
  }
  return s;
}

bool Schema::operator==(const Schema& other) const {
  std::string a, b;
  EncodeTo(&a);
  other.EncodeTo(&b);
  return a == b;
}

void Schema::EncodeTo(std::string* dst) const {
  // Version 1 cannot say "free slot", "no family has this id" or "moved";
  // a schema that needs none of that is written as version 1, so tables
  // never altered keep a manifest older readers understand.
  bool v1 = next_family_id_ == families_.size() + 1;
  for (size_t i = 0; i < families_.size() && v1; i++) {
    v1 = families_[i].id == i + 1 && families_[i].moved_at == 0;
  }
  for (const auto& g : groups_) v1 = v1 && !g.name.empty();
  // Version 3 is version 2 with each group's write buffer size; it is
  // written only when some group has one of its own.
  bool v3 = false;
  for (const auto& g : groups_) v3 = v3 || g.write_buffer_size != 0;
  // Version 4 is version 3 with each family's flags; it is written only
  // when some family has a flag set.
  bool v4 = false;
  for (const auto& f : families_) v4 = v4 || FamilyFlags(f) != 0;
  v3 = v3 || v4;
  if (v3) v1 = false;
  PutVarint32(dst, v1 ? 1 : v4 ? 4 : v3 ? 3 : 2);  // schema encoding version
  PutVarint32(dst, static_cast<uint32_t>(groups_.size()));
  for (const auto& g : groups_) {
    PutLengthPrefixedSlice(dst, g.name);
    dst->push_back(g.in_memory ? 1 : 0);
    dst->push_back(static_cast<char>(g.compression));
    PutVarint32(dst, static_cast<uint32_t>(g.compression_level));
    PutVarint32(dst, g.block_size);
    PutVarint32(dst, static_cast<uint32_t>(g.bloom_bits_per_key));
    if (v3) PutVarint64(dst, g.write_buffer_size);
  }
  PutVarint32(dst, static_cast<uint32_t>(families_.size()));
  for (const auto& f : families_) {
    PutLengthPrefixedSlice(dst, f.name);
    PutVarint32(dst, f.id);
    PutVarint32(dst, f.locality_group);
    if (!v1) PutVarint64(dst, f.moved_at);
    if (v4) PutVarint32(dst, FamilyFlags(f));
  }
  if (!v1) PutVarint32(dst, next_family_id_);
}

Status Schema::DecodeFrom(Slice* input, Schema* schema) {
  auto bad = [](const char* what) { return Status::Corruption(std::string("schema: ") + what); };
  uint32_t version, ngroups, nfamilies;
  if (!GetVarint32(input, &version)) return bad("truncated version");
  if (version < 1 || version > 4) return bad("unknown schema encoding version");
  if (!GetVarint32(input, &ngroups)) return bad("truncated group count");
  Schema s;
  for (uint32_t i = 0; i < ngroups; i++) {
    LocalityGroupOptions g;
    Slice name;
    uint32_t level, block, bloom;
    if (!GetLengthPrefixedSlice(input, &name) || input->size() < 2) return bad("truncated group");
    if (name.empty() && version == 1) return bad("free group slot in a version 1 schema");
    g.name = name.ToString();
    g.in_memory = (*input)[0] != 0;
    g.compression = static_cast<Compression>((*input)[1]);
    input->remove_prefix(2);
    if (!GetVarint32(input, &level) || !GetVarint32(input, &block) || !GetVarint32(input, &bloom)) {
      return bad("truncated group options");
    }
    g.compression_level = static_cast<int>(level);
    g.block_size = block;
    g.bloom_bits_per_key = static_cast<int>(bloom);
    if (version >= 3 && !GetVarint64(input, &g.write_buffer_size)) {
      return bad("truncated group options");
    }
    // Checksummed but out of range (written by a damaged or newer engine):
    // a flush must never meet an unknown compression or a zero block size.
    if (Status v = ValidateGroupOptions(g); !v.ok()) {
      return Status::Corruption("schema: " + std::string(v.message()));
    }
    s.groups_.push_back(std::move(g));
  }
  if (!GetVarint32(input, &nfamilies)) return bad("truncated family count");
  for (uint32_t i = 0; i < nfamilies; i++) {
    Slice name;
    uint32_t id, group;
    uint64_t moved_at = 0;
    uint32_t flags = 0;
    if (!GetLengthPrefixedSlice(input, &name) || !GetVarint32(input, &id) ||
        !GetVarint32(input, &group) || (version >= 2 && !GetVarint64(input, &moved_at)) ||
        (version >= 4 && !GetVarint32(input, &flags))) {
      return bad("truncated family");
    }
    if ((flags & ~kKnownFamilyFlags) != 0) return bad("unknown family flags");
    const bool id_ok = version == 1 ? id == i + 1
                                    : id >= 1 && id <= kMaxFamilyId &&
                                          (s.families_.empty() || id > s.families_.back().id);
    if (!id_ok || group >= s.groups_.size() || s.IsFreeSlot(group)) {
      return bad("family id or group out of range");
    }
    s.families_.push_back(FamilyInfo{name.ToString(), static_cast<uint16_t>(id), group, moved_at,
                                     (flags & kFamilyHidesByTimestamp) != 0});
  }
  if (version == 1) {
    s.next_family_id_ = nfamilies + 1;
  } else if (!GetVarint32(input, &s.next_family_id_) || s.next_family_id_ < 1 ||
             s.next_family_id_ > kMaxFamilyId + 1 ||
             (!s.families_.empty() && s.next_family_id_ <= s.families_.back().id)) {
    return bad("next family id missing or out of range");
  }
  s.BuildIndex();
  if (s.by_name_.size() != s.families_.size()) return bad("duplicate family name");
  *schema = std::move(s);
  return Status::OK();
}

}  // namespace strata::engine
