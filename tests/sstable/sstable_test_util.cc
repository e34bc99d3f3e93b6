#include "sstable/sstable_test_util.h"


#include "common/cell_key.h"

namespace strata::test {

std::string RandomKeyPart(Random* rnd, size_t max_len) {
  const size_t len = rnd->Uniform(max_len + 1);
  std::string s(len, '\0');
  for (auto& c : s) {
    switch (rnd->Uniform(4)) {
      case 0:
        c = '\0';
        break;
      case 1:
        c = '\xff';
        break;
      default:
        c = static_cast<char>('a' + rnd->Uniform(4));
        break;
    }
  }
  return s;
}

std::string RandomCellKey(Random* rnd) {
  std::string key;
  const uint16_t family = static_cast<uint16_t>(rnd->OneIn(4) ? rnd->Uniform(65536) : rnd->Uniform(3));
  const uint64_t ts = rnd->OneIn(8) ? kMaxTimestamp - rnd->Uniform(3) : 1 + rnd->Uniform(1000);
  const SequenceNumber seq = rnd->OneIn(8) ? kMaxSequenceNumber : rnd->Uniform(100000);
  const auto type = static_cast<CellType>(1 + rnd->Uniform(kMaxCellType));
  AppendCellKey(&key, RandomKeyPart(rnd, 12), family, RandomKeyPart(rnd, 6), ts, seq, type);
  return key;
}

Model RandomModel(Random* rnd, size_t n, size_t max_value_len) {
  Model m;
  while (m.size() < n) {
    std::string value = rnd->OneIn(10) ? "" : rnd->RandomBytes(rnd->Uniform(max_value_len + 1));
    m[RandomCellKey(rnd)] = std::move(value);
  }
  return m;
}

Status WriteTable(FileSystem* fs, const std::string& path, const TableBuilderOptions& options,
                  const Model& model) {
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(path, FileOpenOptions{}, &file));
  sstable::TableBuilder builder(options, file.get(), path);
  for (const auto& [k, v] : model) STRATA_RETURN_IF_ERROR(builder.Add(k, v));
  STRATA_RETURN_IF_ERROR(builder.Finish());
  if (builder.FileSize() != file->Size()) return Status::Corruption("size mismatch");
  STRATA_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

Result<std::unique_ptr<TableReader>> OpenTable(FileSystem* fs, const std::string& path,
                                               const TableReaderOptions& options) {
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewRandomAccessFile(path, &file));
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return size.status();
  return TableReader::Open(options, std::move(file), *size, path);
}


}  // namespace strata::test
