// Opening an engine: one open of a directory at a time, create_if_missing
// and error_if_exists, options refused before any file is touched, and a
// missing or damaged manifest refused with the table files left alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::ScratchDir;
using test::TableFilesOnDisk;

TEST_F(EngineTest, SecondOpenOfTheDirectoryFails) {
  auto second = Engine::Open(dir_.path(), options_);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
  EXPECT_NE(second.status().ToString().find(dir_.path()), std::string::npos);
  ASSERT_OK(engine_->Close());
  auto third = Engine::Open(dir_.path(), options_);
  EXPECT_OK(third);
}

TEST(EngineOpenTest, CreateIfMissingAndErrorIfExists) {
  ScratchDir dir("open");
  EngineOptions o;
  o.create_if_missing = false;
  auto e = Engine::Open(dir.Join("db"), o);
  EXPECT_TRUE(e.status().IsNotFound()) << e.status().ToString();
  o.create_if_missing = true;
  e = Engine::Open(dir.Join("db"), o);
  ASSERT_OK(e);
  ASSERT_OK((*e)->Close());
  o.error_if_exists = true;
  EXPECT_TRUE(Engine::Open(dir.Join("db"), o).status().IsAlreadyExists());
}

// Options the log or the write path would refuse later are refused before
// the directory is touched: a bad open of an existing engine changes no file.
TEST(EngineOptionsTest, BadLogAndWriteLimitsChangeNothing) {
  test::ScratchDir dir("options");
  {
    auto e = Engine::Open(dir.path(), EngineOptions());
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    ASSERT_OK((*e)->Close());
  }
  auto listing = [&] {
    std::string all;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
      all += entry.path().string() + " " +
             (entry.is_regular_file() ? std::to_string(entry.file_size()) : "dir") + "\n";
    }
    return all;
  };
  const std::string before = listing();
  std::vector<EngineOptions> bad(7);
  bad[0].wal_segment_size = 0;
  bad[1].wal_segment_size = 100000;  // not a multiple of 32 KiB
  bad[2].max_row_key_size = 0;
  bad[3].max_qualifier_size = (size_t{1} << 30) + 1;
  bad[4].max_value_size = 0;
  bad[5].max_value_size = size_t{5} << 30;  // past what 32-bit lengths hold
  bad[6].max_row_key_size = SIZE_MAX;
  for (size_t i = 0; i < bad.size(); i++) {
    auto e = Engine::Open(dir.path(), bad[i]);
    EXPECT_TRUE(e.status().IsInvalidArgument()) << i << ": " << e.status().ToString();
    EXPECT_EQ(listing(), before) << i;
  }
  EngineOptions limits;
  limits.max_value_size = size_t{1} << 30;
  limits.max_row_key_size = 1;
  auto e = Engine::Open(dir.path(), limits);
  ASSERT_OK(e);
  EXPECT_OK((*e)->OpenTenant("t"));
}

// A database whose manifest is missing or damaged is refused with its files
// untouched: without the manifest every table file would read as a leftover.
TEST_F(EngineTest, MissingOrDamagedManifestLeavesTheFilesAlone) {
  for (int i = 0; i < 100; i++) ASSERT_OK(Put("r" + std::to_string(i), "b", "y", 1, "v"));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(Put("logged", "b", "y", 1, "v"));
  ASSERT_OK(CloseEngine());
  const size_t files = TableFilesOnDisk(dir_);
  ASSERT_GT(files, 0u);
  std::string manifest;
  ASSERT_OK(ReadFileToString(FileSystem::Default(), dir_.Join("MANIFEST"), &manifest));

  ASSERT_OK(FileSystem::Default()->DeleteFile(dir_.Join("MANIFEST")));
  auto e = Engine::Open(dir_.path(), options_);
  EXPECT_TRUE(e.status().IsCorruption()) << e.status().ToString();
  EXPECT_EQ(TableFilesOnDisk(dir_), files);
  EXPECT_FALSE(FileSystem::Default()->FileExists(dir_.Join("MANIFEST")));

  std::string damaged = manifest;
  damaged[damaged.size() / 2] ^= 0x01;  // inside the snapshot, its only record
  ASSERT_OK(WriteFileAtomically(FileSystem::Default(), dir_.Join("MANIFEST"), damaged));
  e = Engine::Open(dir_.path(), options_);
  EXPECT_TRUE(e.status().IsCorruption()) << e.status().ToString();
  EXPECT_EQ(TableFilesOnDisk(dir_), files);

  // A file in sst/ that only starts like a table file's name is not one.
  ASSERT_OK(WriteFileAtomically(FileSystem::Default(), dir_.Join("MANIFEST"), manifest));
  ASSERT_OK(WriteFileAtomically(FileSystem::Default(), dir_.Join("sst/999999.sst.bak"), "keep"));
  Reopen();
  EXPECT_EQ(TableFilesOnDisk(dir_), files + 1);
  EXPECT_EQ(Read("r7").size(), 1u);
  EXPECT_EQ(Read("logged").size(), 1u);
}

}  // namespace
}  // namespace strata
