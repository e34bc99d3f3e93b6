// Slice: a pointer and a length naming bytes owned by someone else.
//
// A Slice never owns memory; whoever hands one out states how long it stays
// valid. It converts to and from std::string_view freely. Intentionally
// copyable; thread-compatible.
#ifndef STRATA_SLICE_H_
#define STRATA_SLICE_H_

#include <cassert>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace strata {

class Slice {
 public:
  constexpr Slice() noexcept : data_(""), size_(0) {}
  constexpr Slice(const char* d, size_t n) noexcept : data_(d), size_(n) {}
  Slice(const std::string& s) noexcept : data_(s.data()), size_(s.size()) {}  // NOLINT
  constexpr Slice(std::string_view s) noexcept : data_(s.data()), size_(s.size()) {}  // NOLINT
  Slice(const char* s) noexcept : data_(s), size_(std::strlen(s)) {}  // NOLINT

  constexpr const char* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  const char* begin() const { return data_; }
  const char* end() const { return data_ + size_; }

  char operator[](size_t n) const {
    assert(n < size_);
    return data_[n];
  }

  void clear() {
    data_ = "";
    size_ = 0;
  }
  // REQUIRES: n <= size()
  void remove_prefix(size_t n) {
    assert(n <= size_);
    data_ += n;
    size_ -= n;
  }
  // REQUIRES: n <= size()
  void remove_suffix(size_t n) {
    assert(n <= size_);
    size_ -= n;
  }

  std::string ToString() const { return std::string(data_, size_); }
  constexpr std::string_view view() const { return std::string_view(data_, size_); }
  constexpr operator std::string_view() const { return view(); }  // NOLINT

  // Three-way byte comparison: <0, 0 or >0.
  int compare(const Slice& b) const {
    const size_t min_len = size_ < b.size_ ? size_ : b.size_;
    int r = min_len == 0 ? 0 : std::memcmp(data_, b.data_, min_len);
    if (r == 0) r = size_ < b.size_ ? -1 : (size_ > b.size_ ? 1 : 0);
    return r;
  }
  bool starts_with(const Slice& x) const {
    return size_ >= x.size_ && (x.size_ == 0 || std::memcmp(data_, x.data_, x.size_) == 0);
  }

 private:
  const char* data_;
  size_t size_;
};

inline bool operator==(const Slice& a, const Slice& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}
inline bool operator!=(const Slice& a, const Slice& b) { return !(a == b); }
inline bool operator<(const Slice& a, const Slice& b) { return a.compare(b) < 0; }

}  // namespace strata

#endif  // STRATA_SLICE_H_
