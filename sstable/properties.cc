// Properties block layout: see sstable/FORMAT.md, "Properties block".
#include "sstable/properties.h"

#include <type_traits>

#include "common/coding.h"
#include "sstable/format.h"

namespace strata::sstable {

namespace {

// Field tags. DO NOT CHANGE: stored on disk. Retired tags stay listed.
enum Tag : uint32_t {
  kTagFormatVersion = 1,
  kTagNumCells = 2,
  kTagNumPuts = 3,
  kTagNumDeleteCells = 4,
  kTagNumDeleteColumns = 5,
  kTagNumDeleteRows = 6,
  kTagNumRows = 7,
  kTagNumColumns = 8,
  kTagRawKeySize = 9,
  kTagRawValueSize = 10,
  kTagNumDataBlocks = 11,
  kTagDataSize = 12,
  kTagIndexSize = 13,
  kTagFilterSize = 14,
  kTagMinTimestamp = 15,
  kTagMaxTimestamp = 16,
  kTagMinSequence = 17,
  kTagMaxSequence = 18,
  kTagFirstRow = 19,
  kTagLastRow = 20,
  kTagSmallestKey = 21,
  kTagLargestKey = 22,
  kTagTableId = 23,
  kTagTabletId = 24,
  kTagLocalityGroupId = 25,
  kTagFileNumber = 26,
  kTagCreationTime = 27,
  kTagCompression = 28,
  kTagCompressionLevel = 29,  // the int32 stored as its uint32 bit pattern
  kTagBlockSize = 30,
  kTagRestartInterval = 31,
  kTagBloomBitsPerKey = 32,
  kTagFamilyIds = 33,  // varint32 per id, ascending
};

void PutInt(std::string* dst, uint32_t tag, uint64_t v) {
  PutVarint32(dst, tag);
  PutVarint32(dst, static_cast<uint32_t>(VarintLength(v)));
  PutVarint64(dst, v);
}

void PutBytes(std::string* dst, uint32_t tag, const std::string& v) {
  PutVarint32(dst, tag);
  PutLengthPrefixedSlice(dst, v);
}

}  // namespace

void TableProperties::EncodeTo(std::string* dst) const {
  PutInt(dst, kTagFormatVersion, format_version);
  PutInt(dst, kTagNumCells, num_cells);
  PutInt(dst, kTagNumPuts, num_puts);
  PutInt(dst, kTagNumDeleteCells, num_delete_cells);
  PutInt(dst, kTagNumDeleteColumns, num_delete_columns);
  PutInt(dst, kTagNumDeleteRows, num_delete_rows);
  PutInt(dst, kTagNumRows, num_rows);
  PutInt(dst, kTagNumColumns, num_columns);
  PutInt(dst, kTagRawKeySize, raw_key_size);
  PutInt(dst, kTagRawValueSize, raw_value_size);
  PutInt(dst, kTagNumDataBlocks, num_data_blocks);
  PutInt(dst, kTagDataSize, data_size);
  PutInt(dst, kTagIndexSize, index_size);
  PutInt(dst, kTagFilterSize, filter_size);
  PutInt(dst, kTagMinTimestamp, min_timestamp);
  PutInt(dst, kTagMaxTimestamp, max_timestamp);
  PutInt(dst, kTagMinSequence, min_sequence);
  PutInt(dst, kTagMaxSequence, max_sequence);
  PutBytes(dst, kTagFirstRow, first_row);
  PutBytes(dst, kTagLastRow, last_row);
  PutBytes(dst, kTagSmallestKey, smallest_key);
  PutBytes(dst, kTagLargestKey, largest_key);
  PutInt(dst, kTagTableId, table_id);
  PutInt(dst, kTagTabletId, tablet_id);
  PutInt(dst, kTagLocalityGroupId, locality_group_id);
  PutInt(dst, kTagFileNumber, file_number);
  PutInt(dst, kTagCreationTime, creation_time);
  PutInt(dst, kTagCompression, compression);
  PutInt(dst, kTagCompressionLevel, static_cast<uint32_t>(compression_level));
  PutInt(dst, kTagBlockSize, block_size);
  PutInt(dst, kTagRestartInterval, restart_interval);
  PutInt(dst, kTagBloomBitsPerKey, bloom_bits_per_key);
  if (has_family_ids) {
    std::string ids;
    for (uint16_t id : family_ids) PutVarint32(&ids, id);
    PutBytes(dst, kTagFamilyIds, ids);
  }
}

Result<TableProperties> TableProperties::Decode(const Slice& input) {
  TableProperties p;
  Slice in = input;
  while (!in.empty()) {
    const size_t at = input.size() - in.size();
    uint32_t tag;
    Slice field;
    if (!GetVarint32(&in, &tag) || !GetLengthPrefixedSlice(&in, &field)) {
      return Status::Corruption("bad property field at offset " + std::to_string(at) +
                                " within the block");
    }
    auto get_int = [&](auto* out) -> bool {
      Slice f = field;
      uint64_t v;
      if (!GetVarint64(&f, &v) || !f.empty()) return false;
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(v);
      return true;
    };
    bool ok = true;
    switch (tag) {
      case kTagFormatVersion: ok = get_int(&p.format_version); break;
      case kTagNumCells: ok = get_int(&p.num_cells); break;
      case kTagNumPuts: ok = get_int(&p.num_puts); break;
      case kTagNumDeleteCells: ok = get_int(&p.num_delete_cells); break;
      case kTagNumDeleteColumns: ok = get_int(&p.num_delete_columns); break;
      case kTagNumDeleteRows: ok = get_int(&p.num_delete_rows); break;
      case kTagNumRows: ok = get_int(&p.num_rows); break;
      case kTagNumColumns: ok = get_int(&p.num_columns); break;
      case kTagRawKeySize: ok = get_int(&p.raw_key_size); break;
      case kTagRawValueSize: ok = get_int(&p.raw_value_size); break;
      case kTagNumDataBlocks: ok = get_int(&p.num_data_blocks); break;
      case kTagDataSize: ok = get_int(&p.data_size); break;
      case kTagIndexSize: ok = get_int(&p.index_size); break;
      case kTagFilterSize: ok = get_int(&p.filter_size); break;
      case kTagMinTimestamp: ok = get_int(&p.min_timestamp); break;
      case kTagMaxTimestamp: ok = get_int(&p.max_timestamp); break;
      case kTagMinSequence: ok = get_int(&p.min_sequence); break;
      case kTagMaxSequence: ok = get_int(&p.max_sequence); break;
      case kTagFirstRow: p.first_row = field.ToString(); break;
      case kTagLastRow: p.last_row = field.ToString(); break;
      case kTagSmallestKey: p.smallest_key = field.ToString(); break;
      case kTagLargestKey: p.largest_key = field.ToString(); break;
      case kTagTableId: ok = get_int(&p.table_id); break;
      case kTagTabletId: ok = get_int(&p.tablet_id); break;
      case kTagLocalityGroupId: ok = get_int(&p.locality_group_id); break;
      case kTagFileNumber: ok = get_int(&p.file_number); break;
      case kTagCreationTime: ok = get_int(&p.creation_time); break;
      case kTagCompression: ok = get_int(&p.compression); break;
      case kTagCompressionLevel: {
        uint32_t v = 0;
        ok = get_int(&v);
        p.compression_level = static_cast<int32_t>(v);
        break;
      }
      case kTagBlockSize: ok = get_int(&p.block_size); break;
      case kTagRestartInterval: ok = get_int(&p.restart_interval); break;
      case kTagBloomBitsPerKey: ok = get_int(&p.bloom_bits_per_key); break;
      case kTagFamilyIds: {
        p.has_family_ids = true;
        p.family_ids.clear();
        Slice f = field;
        while (ok && !f.empty()) {
          uint32_t id;
          ok = GetVarint32(&f, &id) && id <= UINT16_MAX &&
               (p.family_ids.empty() || id > p.family_ids.back());
          if (ok) p.family_ids.push_back(static_cast<uint16_t>(id));
        }
        break;
      }
      default: break;  // a field from a newer writer
    }
    if (!ok) {
      return Status::Corruption("bad value of property " + std::to_string(tag) + " at offset " +
                                std::to_string(at) + " within the block");
    }
  }
  return p;
}

std::string TableProperties::ToString() const {
  std::string r;
  auto line = [&r](const char* name, const std::string& v) {
    r.append(name);
    r.append(": ");
    r.append(v);
    r.push_back('\n');
  };
  auto num = [&](const char* name, uint64_t v) { line(name, std::to_string(v)); };
  num("format_version", format_version);
  num("cells", num_cells);
  num("puts", num_puts);
  num("delete_cells", num_delete_cells);
  num("delete_columns", num_delete_columns);
  num("delete_rows", num_delete_rows);
  num("rows", num_rows);
  num("columns", num_columns);
  num("raw_key_bytes", raw_key_size);
  num("raw_value_bytes", raw_value_size);
  num("data_blocks", num_data_blocks);
  num("data_bytes", data_size);
  num("index_bytes", index_size);
  num("filter_bytes", filter_size);
  num("min_timestamp", min_timestamp);
  num("max_timestamp", max_timestamp);
  num("min_sequence", min_sequence);
  num("max_sequence", max_sequence);
  line("first_row", "'" + EscapeBytes(first_row) + "'");
  line("last_row", "'" + EscapeBytes(last_row) + "'");
  line("smallest_key", HexBytes(smallest_key));
  line("largest_key", HexBytes(largest_key));
  num("table_id", table_id);
  num("tablet_id", tablet_id);
  num("locality_group_id", locality_group_id);
  num("file_number", file_number);
  num("creation_time", creation_time);
  line("compression", CompressionTypeName(static_cast<CompressionType>(compression)));
  line("compression_level", std::to_string(compression_level));
  num("block_size", block_size);
  num("restart_interval", restart_interval);
  num("bloom_bits_per_key", bloom_bits_per_key);
  if (has_family_ids) {
    std::string ids;
    for (uint16_t id : family_ids) {
      if (!ids.empty()) ids.push_back(',');
      ids += std::to_string(id);
    }
    line("family_ids", ids);
  }
  return r;
}

}  // namespace strata::sstable
