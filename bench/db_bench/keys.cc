// The keys and values db_bench writes and checks; see keys.h.
#include "keys.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "common/random.h"

namespace strata::db_bench {

void MakeKey(const Flags& f, uint64_t i, bool missing, std::string* key) {
  key->resize(f.key_size + 1);  // snprintf writes a terminating NUL
  std::snprintf(key->data(), key->size(), "%0*" PRIu64 "%c", static_cast<int>(f.key_size - 1), i,
                missing ? '1' : '0');
  key->resize(f.key_size);
}

void IncrementDigits(std::string* s, size_t digits) {
  for (size_t p = digits; p-- > 0;) {
    char& c = (*s)[p];
    if (c != '9') {
      c++;
      return;
    }
    c = '0';
  }
}

void NextKey(const Flags& f, std::string* key) { IncrementDigits(key, f.key_size - 1); }

void MakeSmallValue(uint64_t i, std::string* value) {
  char buf[kSmallValueSize + 1];
  std::snprintf(buf, sizeof(buf), "%0*" PRIu64, static_cast<int>(kSmallValueSize), i % 100000000);
  value->assign(buf, kSmallValueSize);
}

uint64_t BigValuePos(uint64_t i) { return i * 7919; }

ValueSource::ValueSource(uint64_t seed, size_t value_size) {
  strata::Random rnd(seed);
  const size_t len = std::max<size_t>(1 << 20, value_size * 2);
  while (data_.size() < len) {
    const std::string raw = rnd.RandomLetters(50);
    for (int r = 0; r < 2; r++) data_ += raw;
  }
  value_size_ = value_size;
}

}  // namespace strata::db_bench
