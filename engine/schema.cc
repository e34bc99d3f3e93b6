#include "engine/schema.h"

#include <set>

#include "common/coding.h"

namespace strata::engine {

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
      return Status::InvalidArgument(std::string(what) + " name '" + EscapeBytes(name) +
                                     "' has a byte outside [A-Za-z0-9_.-]");
    }
  }
  return Status::OK();
}

Result<Schema> Schema::FromUser(const TableSchema& input) {
  Schema s;
  if (input.families.empty()) return Status::InvalidArgument("schema has no column families");
  if (input.families.size() > 4096) {
    return Status::InvalidArgument("schema has " + std::to_string(input.families.size()) +
                                   " families; the limit is 4096");
  }
  std::set<std::string, std::less<>> group_names;
  for (const auto& g : input.locality_groups) {
    STRATA_RETURN_IF_ERROR(ValidateName("locality group", g.name));
    if (!group_names.insert(g.name).second) {
      return Status::InvalidArgument("duplicate locality group '" + g.name + "'");
    }
    if (g.compression != Compression::kNone && g.compression != Compression::kZstd) {
      return Status::InvalidArgument("locality group '" + g.name + "': unknown compression");
    }
    if (g.compression == Compression::kZstd && (g.compression_level < 1 || g.compression_level > 22)) {
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
    }
    uint32_t index = 0;
    while (s.groups_[index].name != group) index++;
    s.families_.push_back(
        FamilyInfo{f.name, static_cast<uint16_t>(s.families_.size() + 1), index});
  }
  s.BuildIndex();
  return s;
}

void Schema::BuildIndex() {
  by_name_.clear();
  for (size_t i = 0; i < families_.size(); i++) by_name_[families_[i].name] = i;
}

const FamilyInfo* Schema::FindFamily(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &families_[it->second];
}

const FamilyInfo* Schema::FamilyById(uint16_t id) const {
  if (id == 0 || id > families_.size()) return nullptr;
  return &families_[id - 1];
}

void Schema::EncodeTo(std::string* dst) const {
  PutVarint32(dst, 1);  // schema encoding version
  PutVarint32(dst, static_cast<uint32_t>(groups_.size()));
  for (const auto& g : groups_) {
    PutLengthPrefixedSlice(dst, g.name);
    dst->push_back(g.in_memory ? 1 : 0);
    dst->push_back(static_cast<char>(g.compression));
    PutVarint32(dst, static_cast<uint32_t>(g.compression_level));
    PutVarint32(dst, g.block_size);
    PutVarint32(dst, static_cast<uint32_t>(g.bloom_bits_per_key));
  }
  PutVarint32(dst, static_cast<uint32_t>(families_.size()));
  for (const auto& f : families_) {
    PutLengthPrefixedSlice(dst, f.name);
    PutVarint32(dst, f.id);
    PutVarint32(dst, f.locality_group);
  }
}

Status Schema::DecodeFrom(Slice* input, Schema* schema) {
  auto bad = [](const char* what) { return Status::Corruption(std::string("schema: ") + what); };
  uint32_t version, ngroups, nfamilies;
  if (!GetVarint32(input, &version)) return bad("truncated version");
  if (version != 1) return bad("unknown schema encoding version");
  if (!GetVarint32(input, &ngroups)) return bad("truncated group count");
  Schema s;
  for (uint32_t i = 0; i < ngroups; i++) {
    LocalityGroupOptions g;
    Slice name;
    uint32_t level, block, bloom;
    if (!GetLengthPrefixedSlice(input, &name) || input->size() < 2) return bad("truncated group");
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
    s.groups_.push_back(std::move(g));
  }
  if (!GetVarint32(input, &nfamilies)) return bad("truncated family count");
  for (uint32_t i = 0; i < nfamilies; i++) {
    Slice name;
    uint32_t id, group;
    if (!GetLengthPrefixedSlice(input, &name) || !GetVarint32(input, &id) ||
        !GetVarint32(input, &group)) {
      return bad("truncated family");
    }
    if (id != i + 1 || group >= s.groups_.size()) return bad("family id or group out of range");
    s.families_.push_back(FamilyInfo{name.ToString(), static_cast<uint16_t>(id), group});
  }
  s.BuildIndex();
  *schema = std::move(s);
  return Status::OK();
}

}  // namespace strata::engine
