// The manifest: edits round trip, survive reopen, a torn last edit is
// dropped, and damage anywhere else is Corruption.
#include "engine/manifest.h"

#include <gtest/gtest.h>

#include "common/file_system.h"
#include "util/status_matchers.h"
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
    ASSERT_OK(Manifest::Open(fs, dir.path(), true, &c, &m));
    for (uint64_t i = 1; i <= 20; i++) {
      VersionEdit e = TenantEdit(i, "tenant" + std::to_string(i));
      ASSERT_OK(m->Append(e));
      ASSERT_OK(c.Apply(e));
    }
    TableSchema ts;
    ts.families = {{.name = "f"}};
    VersionEdit t;
    t.tables.push_back({1, 100, "tab", *Schema::FromUser(ts)});
    t.tablets.push_back({100, 101, "", ""});
    ASSERT_OK(m->Append(t));
    // The newest log segment named wins, not the largest.
    for (uint64_t segment : {7, 9, 4}) {
      VersionEdit e;
      e.log_segment = segment;
      ASSERT_OK(m->Append(e));
    }
    ASSERT_OK(m->Close());
  }
  auto size_before = fs->GetFileSize(dir.Join("MANIFEST"));
  Catalog c;
  std::unique_ptr<Manifest> m;
  ASSERT_OK(Manifest::Open(fs, dir.path(), false, &c, &m));
  EXPECT_EQ(c.tenants.size(), 20u);
  EXPECT_EQ(c.next_id, 21u);
  ASSERT_EQ(c.tables.size(), 1u);
  EXPECT_EQ(c.tables[100].schema.families()[0].name, "f");
  EXPECT_EQ(c.tablets[101].table_id, 100u);
  EXPECT_EQ(c.log_segment, 4u);
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
    ASSERT_OK(Manifest::Open(fs, dir.path(), true, &c, &m));
    VersionEdit e = TenantEdit(1, "a");
    e.tenants.push_back({2, "b"});
    e.tables.push_back({1, 10, "t1", *Schema::FromUser(ts)});
    e.tables.push_back({2, 20, "t2", *Schema::FromUser(ts)});
    e.tablets.push_back({10, 11, "", ""});
    e.tablets.push_back({20, 21, "", ""});
    e.next_id = 30;
    ASSERT_OK(m->Append(e));
    ASSERT_OK(c.Apply(e));
    VersionEdit f;
    f.new_files.push_back({21, 0, 0, FileMeta{.number = 22, .size = 1}});
    ASSERT_OK(m->Append(f));
    ASSERT_OK(c.Apply(f));

    VersionEdit bad;
    bad.dropped_tenants.push_back(2);  // still has table 20
    EXPECT_TRUE(c.Apply(bad).IsCorruption());
    VersionEdit drop;
    drop.dropped_tables.push_back(20);
    drop.dropped_tenants.push_back(2);
    ASSERT_OK(m->Append(drop));
    ASSERT_OK(c.Apply(drop));
    EXPECT_EQ(c.retired_tablets, std::set<uint64_t>{21});
    EXPECT_TRUE(c.files.empty());
    ASSERT_OK(m->Close());
  }
  for (int round = 0; round < 2; round++) {  // replayed, then from the snapshot
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_OK(Manifest::Open(fs, dir.path(), false, &c, &m));
    EXPECT_EQ(c.tenants.size(), 1u);
    EXPECT_EQ(c.tables.size(), 1u);
    EXPECT_EQ(c.tablets.size(), 1u);
    EXPECT_EQ(c.retired_tablets, std::set<uint64_t>{21});
    EXPECT_TRUE(c.files.empty());
    VersionEdit reuse;
    reuse.tablets.push_back({10, 21, "", ""});
    EXPECT_TRUE(c.Apply(reuse).IsCorruption());
    ASSERT_OK(m->Close());
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
    ASSERT_OK(Manifest::Open(fs_, dir_.path(), true, &c, &m));
    ASSERT_OK(m->Append(TenantEdit(1, "one")));
    size_before_last_ = *fs_->GetFileSize(path());
    ASSERT_OK(m->Append(TenantEdit(2, "two")));
    ASSERT_OK(m->Close());
    ASSERT_OK(ReadFileToString(fs_, path(), &good_));
  }
  std::string path() const { return dir_.Join("MANIFEST"); }
  Status OpenWith(const std::string& contents, Catalog* c) {
    EXPECT_OK(WriteFileAtomically(fs_, path(), contents));
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
    ASSERT_OK(OpenWith(good_, &c));
    ASSERT_EQ(c.tenants.size(), 2u);
  }
  ASSERT_LT(size_before_last_, good_.size());
  for (size_t cut = size_before_last_; cut < good_.size(); cut++) {
    Catalog c;
    Status s = OpenWith(good_.substr(0, cut), &c);
    ASSERT_OK(s) << "cut at " << cut << ": " << s.ToString();
    EXPECT_EQ(c.tenants.size(), 1u) << "cut at " << cut;
  }
}

// A crash may leave an append's size on disk without its bytes: the tail
// reads as zeros. That is a torn last edit too, however long the zeros run,
// but not zeros with anything after them.
TEST_F(ManifestDamageTest, ZeroedTailIsATornEdit) {
  const size_t last = good_.size() - size_before_last_;
  for (size_t zeros : {size_t{12}, last, last + 100, size_t{4096}}) {
    std::string tail = good_.substr(0, size_before_last_) + std::string(zeros, '\0');
    Catalog c;
    Status s = OpenWith(tail, &c);
    ASSERT_OK(s) << zeros << " zeros: " << s.ToString();
    EXPECT_EQ(c.tenants.size(), 1u) << zeros;
  }
  {
    Catalog c;
    ASSERT_OK(OpenWith(good_ + std::string(64, '\0'), &c));
    EXPECT_EQ(c.tenants.size(), 2u);
  }
  Catalog c;
  std::string zeros_then_data = good_.substr(0, size_before_last_) + std::string(64, '\0') + "x";
  EXPECT_TRUE(OpenWith(zeros_then_data, &c).IsCorruption());
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

// The first record is the snapshot, written whole to a new file that then
// replaced the old one: it is never torn by a crash, so any damage to it,
// a cut included, is Corruption (read as a torn tail, it would leave an
// empty catalog that the open then writes over the real one).
TEST_F(ManifestDamageTest, DamagedSnapshotIsCorruptionAndTheFileIsKept) {
  {
    Catalog c;
    ASSERT_OK(OpenWith(good_, &c));  // rewrites: header + one snapshot
  }
  std::string snapshot_only;
  ASSERT_OK(ReadFileToString(fs_, path(), &snapshot_only));
  for (size_t cut = 0; cut < snapshot_only.size(); cut++) {
    Catalog c;
    Status s = OpenWith(snapshot_only.substr(0, cut), &c);
    EXPECT_TRUE(s.IsCorruption()) << "cut at " << cut << ": " << s.ToString();
    std::string after;
    ASSERT_OK(ReadFileToString(fs_, path(), &after));
    EXPECT_EQ(after, snapshot_only.substr(0, cut)) << "cut at " << cut;
  }
  for (size_t byte = 0; byte < snapshot_only.size(); byte++) {
    std::string bad = snapshot_only;
    bad[byte] ^= 0x10;
    Catalog c;
    Status s = OpenWith(bad, &c);
    EXPECT_TRUE(s.IsCorruption() || s.IsNotSupported()) << "byte " << byte << ": " << s.ToString();
  }
}

// Edits over the limit (small here; 1 GiB in the engine): the writer refuses
// them with the manifest unchanged and still usable; a complete record over
// it is Corruption (not a torn tail that would drop every later edit), a cut
// one is a torn tail; a snapshot over it fails the open, file untouched.
TEST(ManifestLimitTest, OversizeEditsAreRefusedAndNeverReadAsTorn) {
  constexpr uint64_t kLimit = 1024;
  test::ScratchDir dir("manifest");
  FileSystem* fs = FileSystem::Default();
  const std::string path = dir.Join("MANIFEST");
  auto open = [&](uint64_t limit, Catalog* c, std::unique_ptr<Manifest>* m) {
    return Manifest::Open(fs, dir.path(), true, c, m, limit);
  };
  {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_OK(open(kLimit, &c, &m));
    Status s = m->Append(TenantEdit(1, std::string(2000, 'x')));
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    ASSERT_OK(m->Append(TenantEdit(1, "one"))) << "the manifest still takes edits";
    ASSERT_OK(m->Close());
  }
  std::string small;
  ASSERT_OK(ReadFileToString(fs, path, &small));
  {
    Catalog c;
    std::unique_ptr<Manifest> m;
    ASSERT_OK(open(kLimit, &c, &m));
    EXPECT_EQ(c.tenants.size(), 1u);
    ASSERT_OK(m->Close());
    // Written under a larger limit, the edit is over this reader's.
    Catalog again;
    ASSERT_OK(open(Manifest::kMaxEditBytes, &again, &m));
    ASSERT_OK(m->Append(TenantEdit(2, std::string(2000, 'y'))));
    ASSERT_OK(m->Append(TenantEdit(3, "three")));
    ASSERT_OK(m->Close());
  }
  std::string big;
  ASSERT_OK(ReadFileToString(fs, path, &big));
  const size_t big_edit = big.find(std::string(2000, 'y'));
  ASSERT_NE(big_edit, std::string::npos);
  Catalog c;
  std::unique_ptr<Manifest> m;
  Status s = open(kLimit, &c, &m);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("over the limit"), std::string::npos) << s.ToString();
  std::string after;
  ASSERT_OK(ReadFileToString(fs, path, &after));
  EXPECT_EQ(after, big) << "a failed open rewrote the manifest";
  // Cut inside the big edit, it is the torn last record and is dropped.
  ASSERT_OK(WriteFileAtomically(fs, path, big.substr(0, big_edit + 100)));
  Catalog torn;
  s = open(kLimit, &torn, &m);
  ASSERT_OK(s);
  EXPECT_EQ(torn.tenants.size(), 1u);
  ASSERT_OK(m->Close());

  // Edits each under the limit whose snapshot is over it: the open fails.
  ASSERT_OK(WriteFileAtomically(fs, path, small));
  {
    Catalog grow;
    ASSERT_OK(open(kLimit, &grow, &m));
    for (uint64_t id = 2; id <= 4; id++) {
      ASSERT_OK(m->Append(TenantEdit(id, std::string(500, 'a' + id))));
    }
    ASSERT_OK(m->Close());
  }
  ASSERT_OK(ReadFileToString(fs, path, &big));
  Catalog over;
  s = open(kLimit, &over, &m);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ASSERT_OK(ReadFileToString(fs, path, &after));
  EXPECT_EQ(after, big);
  Catalog all;
  ASSERT_OK(open(Manifest::kMaxEditBytes, &all, &m));
  EXPECT_EQ(all.tenants.size(), 4u);
  ASSERT_OK(m->Close());
}

}  // namespace
}  // namespace strata::engine
