// Fuzzes the manifest's decoders (engine/manifest.h, engine/schema.h). The
// first input byte picks what the rest is: a whole MANIFEST file replayed
// by Manifest::Read, one version edit, or one table schema. An edit or a
// schema that decodes must encode to bytes that decode to the same encoding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/manifest.h"
#include "engine/schema.h"
#include "fuzz_check.h"
#include "mem_fs.h"

using namespace strata;
using namespace strata::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      static fuzz::MemFileSystem* fs = new fuzz::MemFileSystem();
      fs->Clear();
      fs->Put("db/MANIFEST", input);
      Catalog catalog;
      (void)Manifest::Read(fs, "db", &catalog, /*max_edit_bytes=*/1 << 20);
      break;
    }
    case 1: {
      VersionEdit edit;
      if (!edit.DecodeFrom(input).ok()) break;
      std::string once;
      edit.EncodeTo(&once);
      VersionEdit again;
      FUZZ_CHECK(again.DecodeFrom(once).ok());
      std::string twice;
      again.EncodeTo(&twice);
      FUZZ_CHECK(once == twice);
      break;
    }
    default: {
      Slice in(input);
      Schema schema;
      if (!Schema::DecodeFrom(&in, &schema).ok()) break;
      std::string once;
      schema.EncodeTo(&once);
      Slice again_in(once);
      Schema again;
      FUZZ_CHECK(Schema::DecodeFrom(&again_in, &again).ok());
      FUZZ_CHECK(again_in.empty());
      FUZZ_CHECK(again == schema);
      break;
    }
  }
  return 0;
}
