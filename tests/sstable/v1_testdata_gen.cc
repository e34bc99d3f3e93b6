// Writes the version-1 test tables (run once with the version-1 writer).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "sstable/sstable_test_util.h"
#include "sstable/v1_testdata.h"
#include "util/status_matchers.h"

namespace strata::test {

TEST(V1TestdataGen, Write) {
  const char* dir = std::getenv("STRATA_V1_TESTDATA_OUT");
  if (dir == nullptr) GTEST_SKIP();
  FileSystem* fs = FileSystem::Default();
  for (const V1TestTable& t : V1TestTables()) {
    const std::string path = std::string(dir) + "/" + t.file_name;
    ASSERT_OK(WriteTable(fs, path, V1TestOptions(t), V1TestCells(t.num_rows)));
    auto table = OpenTable(fs, path);
    ASSERT_OK(table.status());
    std::printf("%s rows:", t.file_name);
    for (int i = 0; i < kV1AbsentProbes; i++) {
      if ((*table)->RowMayMatch(V1AbsentRow(i))) std::printf(" %d", i);
    }
    std::printf("\n%s columns:", t.file_name);
    for (int i = 0; i < t.num_rows; i++) {
      for (int f = 0; f < kV1AbsentFamilies; f++) {
        if ((*table)->ColumnMayMatch(V1TestRow(i), kV1AbsentFamilyBase + f, "absent")) {
          std::printf(" %d", i * kV1AbsentFamilies + f);
        }
      }
    }
    std::printf("\n%s blocks %llu\n", t.file_name,
                static_cast<unsigned long long>((*table)->properties().num_data_blocks));
  }
}

}  // namespace strata::test
