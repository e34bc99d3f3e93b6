// A build without the row store on RADOS (-DSTRATA_WITH_RADOS=OFF): every
// function of strata/rados.h answers NotSupported.
#include <gtest/gtest.h>

#include "strata/rados.h"
#include "strata/transaction.h"

namespace strata {
namespace {

TEST(RadosDisabledTest, EveryCallIsNotSupported) {
  const RadosOptions o;
  TableSchema schema;
  schema.families.push_back({.name = "f"});
  EXPECT_TRUE(CreateRadosTable(o, "t", schema).IsNotSupported());
  EXPECT_TRUE(DropRadosTable(o, "t").IsNotSupported());
  EXPECT_TRUE(OpenRadosRowStore(o, "t").status().IsNotSupported());
  EXPECT_TRUE(SplitRadosTablet(o, "t", "r").IsNotSupported());
  EXPECT_TRUE(SplitLargeRadosTablets(o, "t", 100).status().IsNotSupported());
  EXPECT_TRUE(OpenRadosTransactionDB(nullptr, o).status().IsNotSupported());
}

}  // namespace
}  // namespace strata
