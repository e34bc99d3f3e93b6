// Fuzzes Block::Parse and Block::Iter (sstable/block.h) with the three key
// encodings: the first input byte picks the encoding, the rest is the
// uncompressed block. Every walk, seek and seek-before must stay inside the
// block and end in a clean !Valid() or a Corruption status.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "sstable/block.h"

using strata::Slice;
using strata::sstable::Block;
using strata::sstable::KeyEncoding;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const KeyEncoding encodings[] = {KeyEncoding::kWholeKey, KeyEncoding::kCellKeyTail,
                                   KeyEncoding::kCellKeyTailSuffix};
  const KeyEncoding encoding = encodings[data[0] % 3];
  auto block =
      Block::Parse(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), encoding);
  if (!block.ok()) return 0;
  std::unique_ptr<Block::Iter> it = (*block)->NewIterator();
  std::vector<std::string> keys;
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid() && n < 100000; it->Next(), n++) {
    if (keys.size() < 64) keys.push_back(it->key().ToString());
    (void)it->value().size();
  }
  FUZZ_CHECK(!it->Valid() || n == 100000);
  it->SeekToLast();
  if (it->Valid()) keys.push_back(it->key().ToString());
  keys.emplace_back();
  keys.push_back(std::string(300, '\xff'));
  for (const std::string& k : keys) {
    it->Seek(k);
    if (it->Valid()) (void)it->value().size();
    it->SeekBefore(k);
    if (it->Valid()) {
      (void)it->key().size();
      it->Next();
    }
  }
  for (uint32_t r = 0; r <= (*block)->num_restarts() && r < 64; r++) {
    it->SeekToRestartPoint(r);
    if (it->Valid()) it->Next();
  }
  return 0;
}
