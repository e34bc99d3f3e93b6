// TableProperties: what an SSTable says about itself in its properties
// block (sstable/FORMAT.md, "Properties block"): counts, sizes, key,
// timestamp and sequence ranges, the ids of what it belongs to, and how it
// was written.
//
// A plain value type; thread-compatible. Intentionally copyable.
// Invariant of a decoded value: every field the file did not carry keeps its
// default; unknown fields in the file are skipped (newer writers may add
// fields without a version bump).
#ifndef STRATA_SSTABLE_PROPERTIES_H_
#define STRATA_SSTABLE_PROPERTIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

struct TableProperties {
  uint32_t format_version = 0;
  // Cells and markers, and how many of each CellType.
  uint64_t num_cells = 0;
  uint64_t num_puts = 0;
  uint64_t num_delete_cells = 0;
  uint64_t num_delete_columns = 0;
  uint64_t num_delete_rows = 0;
  uint64_t num_rows = 0;     // distinct rows
  uint64_t num_columns = 0;  // distinct (row, family, qualifier)
  // Sizes. raw_* count the encoded keys and the values as added; data_size,
  // index_size and filter_size are the bytes stored on disk, trailers included.
  uint64_t raw_key_size = 0;
  uint64_t raw_value_size = 0;
  uint64_t num_data_blocks = 0;
  uint64_t data_size = 0;
  uint64_t index_size = 0;
  uint64_t filter_size = 0;
  // Ranges over all cells (0 when the table is empty).
  uint64_t min_timestamp = 0;
  uint64_t max_timestamp = 0;
  uint64_t min_sequence = 0;
  uint64_t max_sequence = 0;
  // Raw (unescaped) first and last row, and the first and last cell keys.
  std::string first_row;
  std::string last_row;
  std::string smallest_key;
  std::string largest_key;
  // What the table belongs to; set by whoever builds it.
  uint64_t table_id = 0;
  uint64_t tablet_id = 0;
  uint64_t locality_group_id = 0;
  uint64_t file_number = 0;
  uint64_t creation_time = 0;  // seconds since the Unix epoch
  // How it was written.
  uint8_t compression = 0;  // CompressionType
  int32_t compression_level = 0;
  uint32_t block_size = 0;
  uint32_t restart_interval = 0;
  uint32_t bloom_bits_per_key = 0;
  // The distinct family ids of its cell keys, ascending (row-delete markers
  // are family 0). Files written before the field existed do not carry it:
  // has_family_ids is false and family_ids empty.
  bool has_family_ids = false;
  std::vector<uint16_t> family_ids;

  // The contents of a properties block.
  void EncodeTo(std::string* dst) const;
  // Corruption (without the file name; callers add it) on malformed input.
  static Result<TableProperties> Decode(const Slice& input);

  // One "name: value" line per field, for tools and logs.
  std::string ToString() const;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_PROPERTIES_H_
