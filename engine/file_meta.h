// FileMeta: what the engine knows about one SSTable without opening it.
//
// Value type; thread-compatible. Intentionally copyable.
#ifndef STRATA_ENGINE_FILE_META_H_
#define STRATA_ENGINE_FILE_META_H_

#include <cstdint>
#include <string>

#include "common/cell_key.h"

namespace strata::engine {

constexpr int kNumLevels = 7;

struct FileMeta {
  uint64_t number = 0;
  uint64_t size = 0;           // bytes on disk
  std::string smallest;        // first cell key
  std::string largest;         // last cell key
  SequenceNumber min_sequence = 0;
  SequenceNumber max_sequence = 0;
  uint64_t entries = 0;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_FILE_META_H_
