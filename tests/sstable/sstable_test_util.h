// Helpers for the sstable tests: random cell keys, a model map, and writing
// and opening a table in one call.
//
// Thread-compatible.
#ifndef STRATA_TESTS_SSTABLE_SSTABLE_TEST_UTIL_H_
#define STRATA_TESTS_SSTABLE_SSTABLE_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "common/random.h"
#include "sstable/table_builder.h"
#include "sstable/table_reader.h"
#include "util/test_util.h"  // ReadAll, WriteAll

namespace strata::test {

using sstable::TableBuilderOptions;
using sstable::TableReader;
using sstable::TableReaderOptions;

using Model = std::map<std::string, std::string>;

// A random row or qualifier: often short, with a good share of 0x00 and 0xFF
// bytes (the bytes the memcomparable encoding treats specially).
std::string RandomKeyPart(Random* rnd, size_t max_len);
// A random, well-formed cell key.
std::string RandomCellKey(Random* rnd);
// `n` random cells; values are empty about one time in ten.
Model RandomModel(Random* rnd, size_t n, size_t max_value_len);

// Builds a table holding `model` at `path`, synced and closed.
Status WriteTable(FileSystem* fs, const std::string& path, const TableBuilderOptions& options,
                  const Model& model);
// Opens the table at `path`.
Result<std::unique_ptr<TableReader>> OpenTable(FileSystem* fs, const std::string& path,
                                               const TableReaderOptions& options = {});

}  // namespace strata::test

#endif  // STRATA_TESTS_SSTABLE_SSTABLE_TEST_UTIL_H_
