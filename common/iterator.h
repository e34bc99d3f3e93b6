// InternalIterator: the iterator contract every layer below the public API
// follows (LevelDB's): Valid/Seek/SeekToFirst/Next/key/value/status, and
// SeekBefore, the one step backwards a row scan's Prev needs. Errors stick
// in status() and make the iterator !Valid().
//
// Thread-compatible: one thread uses an iterator at a time.
#ifndef STRATA_COMMON_ITERATOR_H_
#define STRATA_COMMON_ITERATOR_H_

#include "strata/slice.h"
#include "strata/status.h"

namespace strata {

class InternalIterator {
 public:
  InternalIterator() = default;
  virtual ~InternalIterator() = default;
  InternalIterator(const InternalIterator&) = delete;
  InternalIterator& operator=(const InternalIterator&) = delete;

  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  // Positions at the first entry with key >= target.
  virtual void Seek(const Slice& target) = 0;
  // Positions at the last entry with key < target (!Valid() when there is
  // none): a step back for a reader that then moves forward with Seek or
  // SeekToFirst. Until it does, only Valid/key/value/status may be called,
  // not Next.
  virtual void SeekBefore(const Slice& target) = 0;
  // REQUIRES: Valid()
  virtual void Next() = 0;
  // REQUIRES: Valid(). The returned slices are valid until the iterator moves.
  virtual Slice key() const = 0;
  virtual Slice value() const = 0;
  virtual Status status() const = 0;
};

}  // namespace strata

#endif  // STRATA_COMMON_ITERATOR_H_
