// Schema (engine/schema.h): the ids and slots Schema::Alter hands out and
// keeps, what it reports as taken away, and the manifest encoding of every
// schema version and of tag 14 (engine/MANIFEST.md).
#include "engine/schema.h"

#include <gtest/gtest.h>

#include <string>

#include "common/coding.h"
#include "engine/manifest.h"
#include "util/status_matchers.h"

namespace strata::engine {
namespace {

// Groups by slot (free slots as "-"), then families as name=id@slot.
std::string Ids(const Schema& s) {
  std::string out;
  for (uint32_t i = 0; i < s.locality_groups().size(); i++) {
    out += (s.IsFreeSlot(i) ? std::string("-") : s.locality_groups()[i].name) + " ";
  }
  out += "|";
  for (const FamilyInfo& f : s.families()) {
    out += " " + f.name + "=" + std::to_string(f.id) + "@" + std::to_string(f.locality_group);
    if (f.moved_at != 0) out += "^" + std::to_string(f.moved_at);
  }
  return out + " next=" + std::to_string(s.next_family_id());
}

TableSchema Base() {
  TableSchema s;
  s.locality_groups = {{.name = "g1"}, {.name = "g2", .in_memory = true}};
  s.families = {{.name = "a", .locality_group = "g1"},
                {.name = "b", .locality_group = "g2"},
                {.name = "c", .locality_group = "g1"}};
  return s;
}

Schema RoundTrip(const Schema& s) {
  std::string enc;
  s.EncodeTo(&enc);
  Slice in(enc);
  Schema out;
  EXPECT_OK(Schema::DecodeFrom(&in, &out));
  EXPECT_TRUE(in.empty());
  EXPECT_TRUE(out == s);
  return out;
}

TEST(SchemaTest, AlterKeepsIdsAndSlotsAndNeverReusesIds) {
  auto base = Schema::FromUser(Base());
  ASSERT_OK(base);
  EXPECT_EQ(Ids(*base), "g1 g2 | a=1@0 b=2@1 c=3@0 next=4");

  // Remove b and g2, add d to a new group.
  TableSchema in = Base();
  in.locality_groups = {{.name = "g1"}, {.name = "g3"}};
  in.families = {{.name = "a", .locality_group = "g1"},
                 {.name = "c", .locality_group = "g1"},
                 {.name = "d", .locality_group = "g3"}};
  SchemaChange change;
  auto s1 = Schema::Alter(*base, in, 50, &change);
  ASSERT_OK(s1);
  // g2's slot is freed by this change and stays free until the next one.
  EXPECT_EQ(Ids(*s1), "g1 - g3 | a=1@0 c=3@0 d=4@2 next=5");
  ASSERT_EQ(change.families.size(), 1u);
  EXPECT_EQ(change.families[0].name, "b");
  EXPECT_EQ(change.families[0].old_group, 1u);
  EXPECT_TRUE(change.families[0].removed);
  EXPECT_EQ(change.removed_groups, std::vector<uint32_t>{1});
  EXPECT_EQ(Ids(RoundTrip(*s1)), Ids(*s1));

  // b again: a new id; a new group takes the free slot; c moves.
  in.locality_groups.push_back({.name = "g4"});
  in.families[1].locality_group = "g4";
  in.families.push_back({.name = "b", .locality_group = "g1"});
  auto s2 = Schema::Alter(*s1, in, 60, &change);
  ASSERT_OK(s2);
  EXPECT_EQ(Ids(*s2), "g1 g4 g3 | a=1@0 c=3@1^60 d=4@2 b=5@0 next=6");
  ASSERT_EQ(change.families.size(), 1u);
  EXPECT_EQ(change.families[0].name, "c");
  EXPECT_FALSE(change.families[0].removed);
  EXPECT_EQ(change.families[0].old_group, 0u);
  EXPECT_TRUE(change.removed_groups.empty());
  EXPECT_EQ(Ids(RoundTrip(*s2)), Ids(*s2));
  EXPECT_EQ(s2->FamilyById(2), nullptr);
  EXPECT_EQ(s2->FamilyById(5)->name, "b");
  EXPECT_EQ(s2->FindFamily("c")->moved_at, 60u);

  // As the public API shows it: slot order, families in id order.
  const TableSchema user = s2->ToUser();
  ASSERT_EQ(user.locality_groups.size(), 3u);
  EXPECT_EQ(user.locality_groups[1].name, "g4");
  ASSERT_EQ(user.families.size(), 4u);
  EXPECT_EQ(user.families[3].name, "b");
  EXPECT_EQ(user.families[1].locality_group, "g4");
  // Altering to the schema as shown changes nothing.
  auto same = Schema::Alter(*s2, user, 70, &change);
  ASSERT_OK(same);
  EXPECT_TRUE(*same == *s2);
  EXPECT_TRUE(change.families.empty() && change.removed_groups.empty());
}

TEST(SchemaTest, AlterRefusesReorderingAndKeepsImpliedDefaultOptions) {
  TableSchema plain;
  plain.locality_groups = {{.name = "default", .compression = Compression::kZstd}};
  plain.families = {{.name = "x"}, {.name = "y"}};
  auto base = Schema::FromUser(plain);
  ASSERT_OK(base);
  SchemaChange change;
  TableSchema in;
  in.families = {{.name = "y"}, {.name = "x"}};
  EXPECT_TRUE(Schema::Alter(*base, in, 1, &change).status().IsInvalidArgument());
  in.families = {{.name = "x"}, {.name = "new"}, {.name = "y"}};
  EXPECT_TRUE(Schema::Alter(*base, in, 1, &change).status().IsInvalidArgument());
  // "default" only implied: its options stay.
  in.families = {{.name = "x"}, {.name = "y"}, {.name = "z"}};
  auto s = Schema::Alter(*base, in, 1, &change);
  ASSERT_OK(s);
  EXPECT_EQ(s->locality_groups()[0].compression, Compression::kZstd);
  EXPECT_EQ(Ids(*s), "default | x=1@0 y=2@0 z=3@0 next=4");
}

TEST(SchemaTest, EncodingVersionsAndBadInput) {
  auto base = Schema::FromUser(Base());
  ASSERT_OK(base);
  std::string v1;
  base->EncodeTo(&v1);
  EXPECT_EQ(v1[0], 1) << "a schema never altered stays version 1";

  // Version 2 bytes: one group "g", families id 2 and 5, next id 7.
  auto v2 = [](uint32_t next, uint32_t id2, uint32_t group2, bool free_slot) {
    std::string e;
    PutVarint32(&e, 2);
    PutVarint32(&e, 2);
    for (const char* name : {"g", free_slot ? "" : "h"}) {
      PutLengthPrefixedSlice(&e, name);
      e.push_back(0);
      e.push_back(0);
      PutVarint32(&e, 3);
      PutVarint32(&e, 4096);
      PutVarint32(&e, 10);
    }
    PutVarint32(&e, 2);
    PutLengthPrefixedSlice(&e, "f");
    PutVarint32(&e, 2);
    PutVarint32(&e, 0);
    PutVarint64(&e, 0);
    PutLengthPrefixedSlice(&e, "k");
    PutVarint32(&e, id2);
    PutVarint32(&e, group2);
    PutVarint64(&e, 9);
    PutVarint32(&e, next);
    return e;
  };
  auto decode = [](const std::string& e) {
    Slice in(e);
    Schema s;
    return Schema::DecodeFrom(&in, &s);
  };
  {
    std::string good = v2(7, 5, 0, /*free_slot=*/true);
    Slice in(good);
    Schema s;
    ASSERT_OK(Schema::DecodeFrom(&in, &s));
    EXPECT_EQ(Ids(s), "g - | f=2@0 k=5@0^9 next=7");
  }
  EXPECT_TRUE(decode(v2(5, 5, 0, true)).IsCorruption());   // next id not above the ids
  EXPECT_TRUE(decode(v2(7, 2, 0, true)).IsCorruption());   // ids not ascending
  EXPECT_TRUE(decode(v2(7, 5, 1, true)).IsCorruption());   // family in a free slot
  EXPECT_OK(decode(v2(7, 5, 1, false)));
  EXPECT_TRUE(decode(v2(70000, 5, 0, true)).IsCorruption());  // past 16-bit ids
  std::string truncated = v2(7, 5, 0, true);
  truncated.pop_back();
  EXPECT_TRUE(decode(truncated).IsCorruption());
  // Version 1 cannot hold a free slot or an id gap.
  std::string free_v1 = v2(7, 5, 0, true);
  free_v1[0] = 1;
  EXPECT_TRUE(decode(free_v1).IsCorruption());
  std::string gap_v1;
  PutVarint32(&gap_v1, 1);
  PutVarint32(&gap_v1, 1);
  PutLengthPrefixedSlice(&gap_v1, "g");
  gap_v1.append("\0\0\x03\x80\x20\x0a", 6);
  PutVarint32(&gap_v1, 2);
  for (uint32_t id : {1u, 3u}) {
    PutLengthPrefixedSlice(&gap_v1, id == 1 ? "f" : "k");
    PutVarint32(&gap_v1, id);
    PutVarint32(&gap_v1, 0);
  }
  EXPECT_TRUE(decode(gap_v1).IsCorruption());
  gap_v1[gap_v1.size() - 2] = 2;  // ids 1, 2: fine
  EXPECT_OK(decode(gap_v1));
}

// Group options a CreateTable would refuse are Corruption when a manifest
// holds them (checksummed, so written that way by a damaged or newer
// engine): a flush must never meet an unknown compression or a zero block.
TEST(SchemaTest, DecodeRefusesGroupOptionsOutOfRange) {
  auto v1 = [](uint8_t compression, uint32_t level, uint32_t block, uint32_t bloom) {
    std::string e;
    PutVarint32(&e, 1);  // version
    PutVarint32(&e, 1);  // groups
    PutLengthPrefixedSlice(&e, "g");
    e.push_back('\0');  // not in memory
    e.push_back(static_cast<char>(compression));
    PutVarint32(&e, level);
    PutVarint32(&e, block);
    PutVarint32(&e, bloom);
    PutVarint32(&e, 1);  // families
    PutLengthPrefixedSlice(&e, "f");
    PutVarint32(&e, 1);  // id
    PutVarint32(&e, 0);  // group
    return e;
  };
  auto decode = [](const std::string& e) {
    Slice in(e);
    Schema s;
    return Schema::DecodeFrom(&in, &s);
  };
  EXPECT_OK(decode(v1(0, 0, 4096, 10)));
  EXPECT_OK(decode(v1(1, 3, 256, 0)));
  EXPECT_OK(decode(v1(1, 22, 64 << 20, 64)));
  const std::string bad[] = {
      v1(2, 3, 4096, 10),            // unknown compression
      v1(1, 0, 4096, 10),            // zstd level below 1
      v1(1, 23, 4096, 10),           // zstd level above 22
      v1(0, 0, 0, 10),               // block size 0
      v1(0, 0, 255, 10),             // block size below 256
      v1(0, 0, (64 << 20) + 1, 10),  // block size above 64 MiB
      v1(0, 0, 4096, 65),            // bloom bits above 64
  };
  for (size_t i = 0; i < std::size(bad); i++) {
    const Status s = decode(bad[i]);
    EXPECT_TRUE(s.IsCorruption()) << i << ": " << s.ToString();
  }
}

// A group with a write buffer size of its own makes the encoding version 3
// (version 2 plus the size per group); without one the version stays.
TEST(SchemaTest, GroupWriteBufferSizeIsVersion3) {
  TableSchema user = Base();
  user.locality_groups.push_back({.name = "own", .in_memory = true, .write_buffer_size = 64 << 10});
  user.families.push_back({.name = "z", .locality_group = "own"});
  auto schema = Schema::FromUser(user);
  ASSERT_OK(schema);
  std::string e;
  schema->EncodeTo(&e);
  EXPECT_EQ(e[0], 3);
  Slice in(e);
  Schema back;
  ASSERT_OK(Schema::DecodeFrom(&in, &back));
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(back.ToUser().locality_groups.back().write_buffer_size, 64u << 10);
  EXPECT_EQ(back.ToUser().locality_groups.front().write_buffer_size, 0u);
  std::string again;
  back.EncodeTo(&again);
  EXPECT_EQ(again, e);

  // Every prefix is Corruption; so is a size out of range.
  for (size_t n = 0; n < e.size(); n++) {
    Slice cut(e.data(), n);
    Schema s;
    EXPECT_TRUE(Schema::DecodeFrom(&cut, &s).IsCorruption()) << n;
  }
  for (uint64_t size : {uint64_t{100}, uint64_t{1} << 31}) {
    TableSchema odd = user;
    odd.locality_groups.back().write_buffer_size = 64 << 10;
    auto s = Schema::FromUser(odd);
    ASSERT_OK(s);
    std::string bytes;
    s->EncodeTo(&bytes);
    // The size is the group's last field: 64 KiB is the varint 80 80 04.
    const std::string old_size("\x80\x80\x04", 3);
    const size_t at = bytes.find(old_size);
    ASSERT_NE(at, std::string::npos);
    std::string replaced;
    PutVarint64(&replaced, size);
    bytes.replace(at, old_size.size(), replaced);
    Slice bad(bytes);
    Schema out;
    EXPECT_TRUE(Schema::DecodeFrom(&bad, &out).IsCorruption()) << size;
    odd.locality_groups.back().write_buffer_size = size;
    EXPECT_TRUE(Schema::FromUser(odd).status().IsInvalidArgument()) << size;
  }

  // Without a size of its own anywhere, a never-altered schema stays version 1.
  user.locality_groups.back().write_buffer_size = 0;
  auto plain = Schema::FromUser(user);
  ASSERT_OK(plain);
  std::string v1;
  plain->EncodeTo(&v1);
  EXPECT_EQ(v1[0], 1);
}

// A family with column_markers_hide_by_timestamp makes the encoding version
// 4 (version 3 plus flags per family); every older version reads with the
// option off, and a schema without it keeps its version.
TEST(SchemaTest, FamilyFlagsAreVersion4) {
  TableSchema user = Base();
  user.families.push_back(
      {.name = "h", .locality_group = "g2", .column_markers_hide_by_timestamp = true});
  auto schema = Schema::FromUser(user);
  ASSERT_OK(schema);
  EXPECT_TRUE(schema->FindFamily("h")->column_markers_hide_by_timestamp);
  EXPECT_FALSE(schema->FindFamily("a")->column_markers_hide_by_timestamp);
  std::string e;
  schema->EncodeTo(&e);
  EXPECT_EQ(e[0], 4);
  const Schema back = RoundTrip(*schema);
  EXPECT_TRUE(back.FindFamily("h")->column_markers_hide_by_timestamp);
  EXPECT_FALSE(back.FindFamily("b")->column_markers_hide_by_timestamp);
  const TableSchema shown = back.ToUser();
  ASSERT_EQ(shown.families.size(), 4u);
  EXPECT_TRUE(shown.families[3].column_markers_hide_by_timestamp);
  EXPECT_FALSE(shown.families[0].column_markers_hide_by_timestamp);

  // Every prefix is Corruption; so is a flag bit no reader knows. The
  // flags are each family's last field, and "h" is the last family, before
  // next_family_id (5).
  for (size_t n = 0; n < e.size(); n++) {
    Slice cut(e.data(), n);
    Schema s;
    EXPECT_TRUE(Schema::DecodeFrom(&cut, &s).IsCorruption()) << n;
  }
  ASSERT_EQ(e.substr(e.size() - 2), std::string("\x01\x05", 2));
  for (char flags : {'\x02', '\x03', '\x40'}) {
    std::string odd = e;
    odd[odd.size() - 2] = flags;
    Slice in(odd);
    Schema s;
    EXPECT_TRUE(Schema::DecodeFrom(&in, &s).IsCorruption()) << int{flags};
  }

  // The worked example of engine/MANIFEST.md.
  TableSchema h;
  h.families = {{.name = "h", .column_markers_hide_by_timestamp = true}};
  auto example = Schema::FromUser(h);
  ASSERT_OK(example);
  std::string bytes;
  example->EncodeTo(&bytes);
  EXPECT_EQ(bytes, std::string("\x04\x01\x07"
                               "default"
                               "\x00\x00\x03\x80\x80\x01\x0a\x00"
                               "\x01\x01h\x01\x00\x00\x01"
                               "\x02",
                               26));

  // Without the option, versions 1 and 3 as before; each reads it as off.
  user.families.back().column_markers_hide_by_timestamp = false;
  for (uint64_t size : {uint64_t{0}, uint64_t{64} << 10}) {
    user.locality_groups.back().write_buffer_size = size;
    auto plain = Schema::FromUser(user);
    ASSERT_OK(plain);
    std::string old;
    plain->EncodeTo(&old);
    EXPECT_EQ(old[0], size == 0 ? 1 : 3);
    Slice in(old);
    Schema s;
    ASSERT_OK(Schema::DecodeFrom(&in, &s));
    for (const FamilyInfo& f : s.families()) EXPECT_FALSE(f.column_markers_hide_by_timestamp);
  }
}

// A schema change carries the option of the families it keeps and refuses
// to change it; a new family takes the option it is given.
TEST(SchemaTest, AlterRefusesToChangeTheOption) {
  TableSchema user = Base();
  user.families[1].column_markers_hide_by_timestamp = true;  // b
  auto base = Schema::FromUser(user);
  ASSERT_OK(base);
  for (size_t i : {0, 1}) {
    TableSchema in = user;
    in.families[i].column_markers_hide_by_timestamp =
        !in.families[i].column_markers_hide_by_timestamp;
    SchemaChange change;
    const Status s = Schema::Alter(*base, in, 9, &change).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find(in.families[i].name), std::string::npos) << s.ToString();
  }
  // Moved to another group, and a new family with it.
  TableSchema in = user;
  in.families[1].locality_group = "g1";
  in.families.push_back({.name = "d", .column_markers_hide_by_timestamp = true});
  SchemaChange change;
  auto altered = Schema::Alter(*base, in, 9, &change);
  ASSERT_OK(altered);
  EXPECT_TRUE(altered->FindFamily("b")->column_markers_hide_by_timestamp);
  EXPECT_TRUE(altered->FindFamily("d")->column_markers_hide_by_timestamp);
  EXPECT_FALSE(altered->FindFamily("a")->column_markers_hide_by_timestamp);
  RoundTrip(*altered);
}

TEST(SchemaTest, ManifestTag14ReplacesTheSchema) {
  auto base = Schema::FromUser(Base());
  ASSERT_OK(base);
  Catalog catalog;
  VersionEdit create;
  create.tenants.push_back({1, "t"});
  create.tables.push_back({1, 2, "tab", *base});
  create.tablets.push_back({2, 3, "", ""});
  create.next_id = 4;
  ASSERT_OK(catalog.Apply(create));

  TableSchema in = Base();
  in.families.erase(in.families.begin());
  SchemaChange change;
  auto altered = Schema::Alter(*base, in, 5, &change);
  ASSERT_OK(altered);
  VersionEdit edit;
  edit.altered_tables.push_back({2, *altered});
  edit.last_sequence = 5;
  std::string enc;
  edit.EncodeTo(&enc);
  EXPECT_EQ(static_cast<uint8_t>(enc[0]), 14);
  VersionEdit decoded;
  ASSERT_OK(decoded.DecodeFrom(enc));
  ASSERT_EQ(decoded.altered_tables.size(), 1u);
  EXPECT_TRUE(decoded.altered_tables[0].schema == *altered);
  ASSERT_OK(catalog.Apply(decoded));
  EXPECT_TRUE(catalog.tables[2].schema == *altered);
  EXPECT_EQ(catalog.last_sequence, 5u);
  // A snapshot carries the new schema in tag 3.
  VersionEdit snap = catalog.Snapshot();
  ASSERT_EQ(snap.tables.size(), 1u);
  EXPECT_TRUE(snap.tables[0].schema == *altered);
  EXPECT_TRUE(snap.altered_tables.empty());

  // An unknown table, or a schema that gives back ids, is Corruption.
  VersionEdit unknown;
  unknown.altered_tables.push_back({99, *altered});
  EXPECT_TRUE(catalog.Apply(unknown).IsCorruption());
  VersionEdit back;
  back.altered_tables.push_back({2, *base});  // next_family_id 4, as the altered one
  EXPECT_OK(catalog.Apply(back));             // (ids were not given back: same counter)
  TableSchema one;
  one.families = {{.name = "a"}};
  VersionEdit shrink;
  shrink.altered_tables.push_back({2, *Schema::FromUser(one)});  // one slot, next id 2
  EXPECT_TRUE(catalog.Apply(shrink).IsCorruption());
}

}  // namespace
}  // namespace strata::engine
