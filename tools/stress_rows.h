// What strata-stress's rows hold (tools/strata_stress.cc): the row keys, and
// the cells of each version of a row, from which a read tells the version a
// row holds and whether it is whole.
#ifndef STRATA_TOOLS_STRESS_ROWS_H_
#define STRATA_TOOLS_STRESS_ROWS_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/coding.h"
#include "strata/row_mutation.h"
#include "stress_args.h"
#include "tool_util.h"

namespace strata::stress {

inline std::string RowKey(uint32_t row) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "row%07u", row);
  return buf;
}

// The row number of a key RowKey made, or nullopt.
inline std::optional<uint32_t> RowNumber(std::string_view key) {
  if (key.size() != 10 || key.substr(0, 3) != "row") return std::nullopt;
  uint64_t v = 0;
  if (!tools::ParseDecimal(std::string(key.substr(3)), &v)) return std::nullopt;
  return static_cast<uint32_t>(v);
}

inline std::string Id(uint32_t version, uint64_t slot) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "v%u.s%" PRIu64, version, slot);
  return buf;
}

// `id` followed by filler whose length depends on the version and slot.
inline std::string Value(uint32_t version, uint64_t slot, uint32_t spread) {
  std::string v = Id(version, slot);
  const uint64_t len = (version * 2654435761ull + slot * 40503ull) % spread;
  v.append(len, static_cast<char>('a' + version % 26));
  return v;
}

inline RowMutation PlainRowVersion(uint32_t version, uint64_t slot) {
  RowMutation m;
  m.Put("a", "x", version, Id(version, slot))
      .Put("a", "y", version, Value(version, slot, 97))
      .Put("b", "z", version, Value(version, slot, 700));
  return m;
}

inline std::string Describe(const std::vector<Cell>& cells) {
  if (cells.empty()) return "no cells";
  std::string out;
  for (const Cell& c : cells) {
    if (!out.empty()) out += ", ";
    out += c.family + ":" + c.qualifier + "@" + std::to_string(c.timestamp) + "=\"" +
           EscapePrefix(c.value, 24) + "\"";
  }
  return out;
}

// The version a plain row's newest cells hold (0: no cells), or nullopt with
// `why` set when they are not one whole version of that row.
inline std::optional<uint32_t> PlainVersion(const std::vector<Cell>& cells, uint64_t slot,
                                            std::string* why) {
  if (cells.empty()) return 0;
  const Cell* x = nullptr;
  for (const Cell& c : cells) {
    if (c.family == "a" && c.qualifier == "x") x = &c;
  }
  if (x == nullptr || x->timestamp == 0 || x->timestamp > UINT32_MAX) {
    *why = "not a whole row: " + Describe(cells);
    return std::nullopt;
  }
  const uint32_t version = static_cast<uint32_t>(x->timestamp);
  const RowMutation want = PlainRowVersion(version, slot);
  bool whole = cells.size() == want.size();
  for (const RowMutation::Entry& e : want.entries()) {
    bool found = false;
    for (const Cell& c : cells) {
      found |= c.family == e.family && c.qualifier == e.qualifier && c.timestamp == e.timestamp &&
               c.value == e.value;
    }
    whole &= found;
  }
  if (!whole) {
    *why = "not one whole version " + std::to_string(version) + ": " + Describe(cells);
    return std::nullopt;
  }
  return version;
}

// The version a transactional row's value names (0: none), or nullopt.
inline std::optional<uint32_t> TxnVersion(const std::string& value, uint64_t slot,
                                          std::string* why) {
  uint32_t version = 0;
  if (std::sscanf(value.c_str(), "v%u.", &version) != 1 || version == 0 ||
      value != Value(version, slot, 200)) {
    *why = "value \"" + EscapePrefix(value, 40) + "\" is no version of this row";
    return std::nullopt;
  }
  return version;
}

inline std::string PendingText(uint32_t pending) {
  return pending == 0 ? "none" : std::to_string(pending & ~kPending);
}

}  // namespace strata::stress

#endif  // STRATA_TOOLS_STRESS_ROWS_H_
