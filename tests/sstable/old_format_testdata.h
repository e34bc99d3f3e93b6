// The contents and options of the old-format tables checked in under
// tests/sstable/testdata/: v1_*.sst, written by the version-1 code before
// version 2 existed, and v2_*.sst, the same cells and options written by the
// version-2 code before version 3 existed (a test that wrote them lived next
// to this file then). old_format_test.cc opens them with the current reader
// and checks every cell, seek and bloom answer against OldFormatCells(), and
// checks that the writer, asked for their version, still writes them byte
// for byte.
//
// Everything here is deterministic (its own small generator, no library
// randomness), so the expected contents never drift from the files.
//
// Pure functions; thread-safe.
#ifndef STRATA_TESTS_SSTABLE_OLD_FORMAT_TESTDATA_H_
#define STRATA_TESTS_SSTABLE_OLD_FORMAT_TESTDATA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "sstable/table_builder.h"

namespace strata::test {

struct OldFormatTable {
  const char* file_name;  // under tests/sstable/testdata/
  uint32_t format_version;
  int num_rows;
  sstable::CompressionType compression;
  int bloom_bits_per_key;
  uint32_t block_size;
  int restart_interval;
};

inline const std::vector<OldFormatTable>& OldFormatTables() {
  static const std::vector<OldFormatTable> tables = {
      {"v1_plain_bloom.sst", 1, 40, sstable::CompressionType::kNone, 10, 512, 16},
      {"v1_zstd_bloom.sst", 1, 60, sstable::CompressionType::kZstd, 10, 1024, 16},
      {"v1_plain_nofilter.sst", 1, 30, sstable::CompressionType::kNone, 0, 256, 4},
      {"v1_zstd_nofilter.sst", 1, 50, sstable::CompressionType::kZstd, 0, 2048, 1},
      {"v2_plain_bloom.sst", 2, 40, sstable::CompressionType::kNone, 10, 512, 16},
      {"v2_zstd_bloom.sst", 2, 60, sstable::CompressionType::kZstd, 10, 1024, 16},
      {"v2_plain_nofilter.sst", 2, 30, sstable::CompressionType::kNone, 0, 256, 4},
      {"v2_zstd_nofilter.sst", 2, 50, sstable::CompressionType::kZstd, 0, 2048, 1},
  };
  return tables;
}

// A 64-bit LCG step (Knuth's MMIX constants), high bits out.
inline uint64_t OldFormatNext(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 17;
}

// The raw (unescaped) row `i` of every test table: some rows hold 0x00 and
// 0xFF bytes, one is empty.
inline std::string OldFormatRow(int i) {
  if (i == 0) return std::string();
  std::string row = "row" + std::to_string(1000 + i);
  if (i % 5 == 0) row.insert(3, 1, '\0');
  if (i % 7 == 0) row.push_back('\xff');
  if (i % 11 == 0) row += std::string("\0\0", 2);
  return row;
}

// The cells of a table of `num_rows` rows, keyed by cell key: puts in
// families 1, 2 and 300 with several versions, delete-cell, delete-column
// and delete-row markers, qualifiers with 0x00 bytes and empty ones,
// timestamps and sequences up to their maxima, empty and compressible values.
inline std::map<std::string, std::string> OldFormatCells(int num_rows) {
  std::map<std::string, std::string> cells;
  uint64_t state = 0x5eed0000u + static_cast<uint64_t>(num_rows);
  static const uint16_t kFamilies[] = {1, 2, 300};
  static const char* const kQualifiers[] = {"", "q", "name", "q\0x", "zz"};
  for (int i = 0; i < num_rows; i++) {
    const std::string row = OldFormatRow(i);
    if (i % 4 == 1) {
      std::string key;
      const uint64_t ts = i % 8 == 1 ? kMaxTimestamp : 500 + OldFormatNext(&state) % 1000;
      AppendCellKey(&key, row, kRowMarkerFamily, Slice(), ts, OldFormatNext(&state) % 100000,
                    CellType::kDeleteRow);
      cells[key] = "";
    }
    const int columns = 1 + static_cast<int>(OldFormatNext(&state) % 4);
    for (int c = 0; c < columns; c++) {
      const uint16_t family = kFamilies[OldFormatNext(&state) % 3];
      const int qi = static_cast<int>(OldFormatNext(&state) % 5);
      const Slice qualifier(kQualifiers[qi],
                            qi == 3 ? 3 : std::char_traits<char>::length(kQualifiers[qi]));
      const int versions = 1 + static_cast<int>(OldFormatNext(&state) % 3);
      for (int v = 0; v < versions; v++) {
        const uint64_t r = OldFormatNext(&state);
        uint64_t ts = 1000 * (versions - v) + r % 1000;
        if (r % 13 == 0) ts = kMaxTimestamp - v;
        if (r % 17 == 0) ts = v;
        SequenceNumber seq = OldFormatNext(&state) % 1000000;
        if (r % 19 == 0) seq = kMaxSequenceNumber - v;
        CellType type = CellType::kPut;
        if (r % 6 == 1) type = CellType::kDeleteCell;
        if (r % 9 == 2) type = CellType::kDeleteColumn;
        std::string value;
        if (type == CellType::kPut && r % 10 != 0) {
          const int len = static_cast<int>(r % 90);
          for (int j = 0; j < len; j++) value.push_back(static_cast<char>('a' + (i + j) % 7));
          value += "#" + std::to_string(r % 100000);
        }
        std::string key;
        AppendCellKey(&key, row, family, qualifier, ts, seq, type);
        cells[key] = value;
      }
    }
  }
  return cells;
}

// Rows that are in no test table (for bloom probes that should mostly miss).
inline std::string OldFormatAbsentRow(int i) { return "absent" + std::to_string(i); }
constexpr int kOldFormatAbsentProbes = 3000;
// Absent columns probed in each present row i: families kOldFormatAbsentFamilyBase
// + [0, kOldFormatAbsentFamilies), qualifier "absent"; probe i * kOldFormatAbsentFamilies + f.
constexpr uint16_t kOldFormatAbsentFamilyBase = 3;
constexpr int kOldFormatAbsentFamilies = 40;

// The options the files were written with.
inline sstable::TableBuilderOptions OldFormatOptions(const OldFormatTable& t) {
  sstable::TableBuilderOptions o;
  o.format_version = t.format_version;
  o.compression = t.compression;
  o.compression_level = 3;
  o.block_size = t.block_size;
  o.restart_interval = t.restart_interval;
  o.bloom_bits_per_key = t.bloom_bits_per_key;
  o.table_id = 11;
  o.tablet_id = 12;
  o.locality_group_id = 13;
  o.file_number = 14;
  o.creation_time = 1700000000;
  return o;
}

}  // namespace strata::test

#endif  // STRATA_TESTS_SSTABLE_OLD_FORMAT_TESTDATA_H_
