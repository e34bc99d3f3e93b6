// Set-ups the engine tests share.
#ifndef STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
#define STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include "strata/engine.h"

namespace strata::test {

// Families a and c in the in-memory group "small", b in the group "big".
inline TableSchema TwoGroupSchema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "small", .in_memory = true});
  s.locality_groups.push_back({.name = "big"});
  s.families.push_back({.name = "a", .locality_group = "small"});
  s.families.push_back({.name = "b", .locality_group = "big"});
  s.families.push_back({.name = "c", .locality_group = "small"});
  return s;
}

// Creates tenant "t" holding table "tab" with the one family "f" and
// returns the table; on failure the test fails and the handle is empty.
inline Table CreateOneFamilyTable(Engine* engine) {
  TableSchema s;
  s.families = {{.name = "f"}};
  Status st = engine->CreateTenant("t");
  if (st.ok()) st = engine->OpenTenant("t")->CreateTable("tab", s);
  if (!st.ok()) {
    ADD_FAILURE() << st.ToString();
    return Table();
  }
  return *engine->OpenTenant("t")->OpenTable("tab");
}

}  // namespace strata::test

#endif  // STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
