// The manifest: edits round trip, survive reopen, a torn last edit is
// dropped, and damage anywhere else is Corruption.
#include "engine/manifest.h"

#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/file_system.h"
#include "util/test_util.h"

namespace strata::engine {
namespace {

VersionEdit TenantEdit(uint64_t id, const std::string& name) {
  VersionEdit e;
  e.tenants.push_back({id, name});
  e.next_id = id + 1;
  return e;
}

TEST(ManifestTest, EditsSurviveReopenAndAreCompacted) {
  test::ScratchDir dir("manifest");
  FileSystem* fs = FileSystem::Default();
  {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_TRUE(Manifest::Open(fs, dir.path(), true, &c, &m).ok());
    for (uint64_t i = 1; i <= 20; i++) {
      VersionEdit e = TenantEdit(i, "tenant" + std::to_string(i));
      ASSERT_TRUE(m->Append(e).ok());
      ASSERT_TRUE(c.Apply(e).ok());
    }
    TableSchema ts;
    ts.families = {{.name = "f"}};
    VersionEdit t;
    t.tables.push_back({1, 100, "tab", *Schema::FromUser(ts)});
    t.tablets.push_back({100, 101, "", ""});
    ASSERT_TRUE(m->Append(t).ok());
    ASSERT_TRUE(m->Close().ok());
  }
  auto size_before = fs->GetFileSize(dir.Join("MANIFEST"));
  Catalog c;
  std::unique_ptr<Manifest> m;
  ASSERT_TRUE(Manifest::Open(fs, dir.path(), false, &c, &m).ok());
  EXPECT_EQ(c.tenants.size(), 20u);
  EXPECT_EQ(c.next_id, 21u);
  ASSERT_EQ(c.tables.size(), 1u);
  EXPECT_EQ(c.tables[100].schema.families()[0].name, "f");
  EXPECT_EQ(c.tablets[101].table_id, 100u);
  // Rewritten as one snapshot: smaller than 21 separate edits.
  EXPECT_LT(*fs->GetFileSize(dir.Join("MANIFEST")), *size_before);
}

TEST(ManifestTest, DropsRetireTabletsAcrossSnapshots) {
  test::ScratchDir dir("manifest");
  FileSystem* fs = FileSystem::Default();
  TableSchema ts;
  ts.families = {{.name = "f"}};
  {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_TRUE(Manifest::Open(fs, dir.path(), true, &c, &m).ok());
    VersionEdit e = TenantEdit(1, "a");
    e.tenants.push_back({2, "b"});
    e.tables.push_back({1, 10, "t1", *Schema::FromUser(ts)});
    e.tables.push_back({2, 20, "t2", *Schema::FromUser(ts)});
    e.tablets.push_back({10, 11, "", ""});
    e.tablets.push_back({20, 21, "", ""});
    e.next_id = 30;
    ASSERT_TRUE(m->Append(e).ok());
    ASSERT_TRUE(c.Apply(e).ok());
    VersionEdit f;
    f.new_files.push_back({21, 0, 0, FileMeta{.number = 22, .size = 1}});
    ASSERT_TRUE(m->Append(f).ok());
    ASSERT_TRUE(c.Apply(f).ok());

    VersionEdit bad;
    bad.dropped_tenants.push_back(2);  // still has table 20
    EXPECT_TRUE(c.Apply(bad).IsCorruption());
    VersionEdit drop;
    drop.dropped_tables.push_back(20);
    drop.dropped_tenants.push_back(2);
    ASSERT_TRUE(m->Append(drop).ok());
    ASSERT_TRUE(c.Apply(drop).ok());
    EXPECT_EQ(c.retired_tablets, std::set<uint64_t>{21});
    EXPECT_TRUE(c.files.empty());
    ASSERT_TRUE(m->Close().ok());
  }
  for (int round = 0; round < 2; round++) {  // replayed, then from the snapshot
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_TRUE(Manifest::Open(fs, dir.path(), false, &c, &m).ok());
    EXPECT_EQ(c.tenants.size(), 1u);
    EXPECT_EQ(c.tables.size(), 1u);
    EXPECT_EQ(c.tablets.size(), 1u);
    EXPECT_EQ(c.retired_tablets, std::set<uint64_t>{21});
    EXPECT_TRUE(c.files.empty());
    VersionEdit reuse;
    reuse.tablets.push_back({10, 21, "", ""});
    EXPECT_TRUE(c.Apply(reuse).IsCorruption());
    ASSERT_TRUE(m->Close().ok());
  }
}

TEST(ManifestTest, MissingManifestWithoutCreateIsNotFound) {
  test::ScratchDir dir("manifest");
  Catalog c;
  std::unique_ptr<Manifest> m;
  EXPECT_TRUE(Manifest::Open(FileSystem::Default(), dir.path(), false, &c, &m).IsNotFound());
}

class ManifestDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_TRUE(Manifest::Open(fs_, dir_.path(), true, &c, &m).ok());
    ASSERT_TRUE(m->Append(TenantEdit(1, "one")).ok());
    size_before_last_ = *fs_->GetFileSize(path());
    ASSERT_TRUE(m->Append(TenantEdit(2, "two")).ok());
    ASSERT_TRUE(m->Close().ok());
    ASSERT_TRUE(ReadFileToString(fs_, path(), &good_).ok());
  }
  std::string path() const { return dir_.Join("MANIFEST"); }
  Status OpenWith(const std::string& contents, Catalog* c) {
    EXPECT_TRUE(WriteFileAtomically(fs_, path(), contents).ok());
    std::unique_ptr<Manifest> m;
    return Manifest::Open(fs_, dir_.path(), false, c, &m);
  }

  test::ScratchDir dir_{"manifest"};
  FileSystem* fs_ = FileSystem::Default();
  std::string good_;
  uint64_t size_before_last_ = 0;
};

TEST_F(ManifestDamageTest, TornLastEditIsDropped) {
  // Cut the file at every point inside the last edit: the first two edits
  // (snapshot + "one") always survive, "two" never does.
  {
    Catalog c;
    ASSERT_TRUE(OpenWith(good_, &c).ok());
    ASSERT_EQ(c.tenants.size(), 2u);
  }
  ASSERT_LT(size_before_last_, good_.size());
  for (size_t cut = size_before_last_; cut < good_.size(); cut++) {
    Catalog c;
    Status s = OpenWith(good_.substr(0, cut), &c);
    ASSERT_TRUE(s.ok()) << "cut at " << cut << ": " << s.ToString();
    EXPECT_EQ(c.tenants.size(), 1u) << "cut at " << cut;
  }
}

TEST_F(ManifestDamageTest, FlippedBitsAreCorruption) {
  // Every bit of the header and the middle edit; the last edit may read as torn.
  int corrupt = 0;
  for (size_t byte = 0; byte < size_before_last_; byte++) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = good_;
      bad[byte] ^= static_cast<char>(1 << bit);
      Catalog c;
      Status s = OpenWith(bad, &c);
      EXPECT_TRUE(s.IsCorruption() || s.IsNotSupported())
          << "byte " << byte << " bit " << bit << ": " << s.ToString();
      corrupt++;
    }
  }
  EXPECT_GT(corrupt, 0);
}

// Edits over the 64 MiB limit: the writer refuses them with the manifest
// unchanged; a reader meets one only in a damaged file, where a complete one
// is Corruption (not a torn tail that would drop every later edit).
TEST_F(ManifestDamageTest, OversizeEditsAreRefusedAndNeverReadAsTorn) {
  constexpr size_t kLimit = size_t{64} << 20;
  {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_TRUE(Manifest::Open(fs_, dir_.path(), false, &c, &m).ok());
    VersionEdit huge = TenantEdit(3, std::string(kLimit, 'x'));
    Status s = m->Append(huge);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_TRUE(m->Append(TenantEdit(3, "three")).ok()) << "the manifest still takes edits";
    ASSERT_TRUE(m->Close().ok());
    Catalog again;
    ASSERT_TRUE(Manifest::Open(fs_, dir_.path(), false, &again, &m).ok());
    EXPECT_EQ(again.tenants.size(), 3u);
    ASSERT_TRUE(m->Close().ok());
  }
  // A record header naming limit + 1 bytes (its length check intact).
  std::string header(12, '\0');
  const uint32_t len = static_cast<uint32_t>(kLimit + 1);
  EncodeFixed32(header.data() + 4, len);
  EncodeFixed32(header.data() + 8, ~len);
  const std::string prefix = good_.substr(0, size_before_last_);
  Catalog c;
  Status s =
      OpenWith(prefix + header + std::string(len, 'y') + good_.substr(size_before_last_), &c);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  // Cut short, it is a torn last record and is dropped.
  Catalog torn;
  s = OpenWith(prefix + header + std::string(100, 'y'), &torn);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(torn.tenants.size(), 1u);
}

}  // namespace
}  // namespace strata::engine
