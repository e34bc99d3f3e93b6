// The keys and values db_bench writes and checks: key i as zero-padded
// decimal digits, scansmall's small-family values, and the source of the
// values that compress to about half. ValueSource is immutable after
// construction, so thread-safe.
#ifndef STRATA_BENCH_DB_BENCH_KEYS_H_
#define STRATA_BENCH_DB_BENCH_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "flags.h"

namespace strata::db_bench {

// Key `i` is i in key_size - 1 zero-padded decimal digits and then '0' for a
// key that is written or '1' for one that never is: a missing key sorts right
// after an existing one.
void MakeKey(const Flags& f, uint64_t i, bool missing, std::string* key);

// Adds one to the decimal number in the first `digits` bytes of *s; 99..9
// wraps to 00..0.
void IncrementDigits(std::string* s, size_t digits);

// Turns key i (an existing one) into key i + 1.
void NextKey(const Flags& f, std::string* key);

// The small family's value of row i: its number's last 8 decimal digits.
void MakeSmallValue(uint64_t i, std::string* value);

// The big family's value of row i picks its start in the ValueSource by this.
uint64_t BigValuePos(uint64_t i);

// Values compress to about half, as db_bench with --compression_ratio=0.5:
// each 100-byte piece repeats 50 random bytes.
class ValueSource {
 public:
  ValueSource(uint64_t seed, size_t value_size);
  // A value that starts at a position picked by `pos`.
  std::string_view Get(uint64_t pos) const {
    const size_t start = static_cast<size_t>(pos % (data_.size() - value_size_));
    return std::string_view(data_).substr(start, value_size_);
  }

 private:
  std::string data_;
  size_t value_size_ = 0;
};

}  // namespace strata::db_bench

#endif  // STRATA_BENCH_DB_BENCH_KEYS_H_
