// CompactionFilter: a hook that sees, during compaction, every live version
// of one column at a time and may keep, drop or rewrite each. The MVCC
// garbage collector is built on it; applications may install their own
// (EngineOptions::compaction_filter), e.g. to keep only the newest N versions.
//
// Implementations must be thread-safe: compactions of different tablets may
// call one filter at once.
#ifndef STRATA_COMPACTION_FILTER_H_
#define STRATA_COMPACTION_FILTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class CompactionFilter {
 public:
  enum class Decision {
    kKeep,     // the version stays as it is
    kDrop,     // the version is removed from the compaction's output
    kRewrite,  // the version stays with the value in (*new_values)[i]
  };

  struct Context {
    uint64_t tablet_id = 0;
    std::string_view table;
    std::string_view locality_group;
    // No older data of this key range exists below the output: what is
    // dropped here is gone, not merely hidden.
    bool bottommost = false;
  };

  // One version of a column, as visible after delete markers in the
  // compaction were applied. Valid only during the call.
  struct Version {
    uint64_t timestamp = 0;
    std::string_view value;
  };

  virtual ~CompactionFilter() = default;

  // Called once per column with its versions newest first. Versions below
  // the compaction's output (when !context.bottommost) are not shown, so a
  // filter that drops a version may let an older one below show through. Set
  // (*decisions)[i] for each version (it arrives sized and filled with kKeep);
  // for kRewrite put the new value in (*new_values)[i] (also arrives sized).
  virtual void FilterColumn(const Context& context, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            const std::vector<Version>& versions,
                            std::vector<Decision>* decisions,
                            std::vector<std::string>* new_values) = 0;
};

}  // namespace strata

#endif  // STRATA_COMPACTION_FILTER_H_
