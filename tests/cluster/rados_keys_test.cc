// The omap key encoding of RADOS tablets (cluster/rados_keys.h): keys sort
// as the row store orders cells, hold no NUL, and decode to what made them.
#include "cluster/rados_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "common/random.h"
#include "strata/options.h"
#include "util/test_util.h"

namespace strata::cluster::rados_keys {
namespace {

std::string RandomBytes(Random* rnd) {
  static const char kAlphabet[] = {'\0', '\x01', '\x02', 'a', 'b', '\xff'};
  std::string s;
  const size_t n = rnd->Uniform(4);
  for (size_t i = 0; i < n; i++) s.push_back(kAlphabet[rnd->Uniform(sizeof(kAlphabet))]);
  return s;
}

TEST(RadosKeysTest, KeysSortInCellOrderHoldNoNulAndDecode) {
  Random rnd(test::TestSeed());
  struct Made {
    std::string row;
    uint16_t family;
    std::string qualifier;
    uint64_t timestamp;
    std::string key;
  };
  std::vector<Made> made;
  for (int i = 0; i < 5000; i++) {
    Made m{"r" + RandomBytes(&rnd), static_cast<uint16_t>(1 + rnd.Uniform(kMaxFamilyId)),
           RandomBytes(&rnd), rnd.OneIn(10) ? kMaxTimestamp : 1 + rnd.Uniform(50), ""};
    if (rnd.OneIn(3)) m.row.insert(m.row.begin(), '\0');
    m.key = CellKey(ColumnPrefix(m.row, m.family, m.qualifier), m.timestamp);
    EXPECT_EQ(m.key.find('\0'), std::string::npos);
    DecodedKey d;
    ASSERT_TRUE(DecodeKey(m.key, &d));
    EXPECT_EQ(std::tie(d.row, d.family_id, d.qualifier, d.timestamp),
              std::tie(m.row, m.family, m.qualifier, m.timestamp));
    EXPECT_FALSE(d.is_version);
    EXPECT_EQ(RowPrefixLength(m.key), RowPrefix(m.row).size());
    // Every key of the row lies above its version key and the scan bound,
    // and every key of a later row above that row's bound.
    EXPECT_LT(VersionKey(m.row), m.key);
    EXPECT_LT(StartAfterForRow(m.row), VersionKey(m.row));
    made.push_back(std::move(m));
  }
  std::sort(made.begin(), made.end(), [](const Made& a, const Made& b) {
    if (a.row != b.row) return a.row < b.row;
    if (a.family != b.family) return a.family < b.family;
    if (a.qualifier != b.qualifier) return a.qualifier < b.qualifier;
    return a.timestamp > b.timestamp;
  });
  for (size_t i = 1; i < made.size(); i++) {
    EXPECT_LE(made[i - 1].key, made[i].key) << i;
    if (made[i - 1].row < made[i].row) {
      EXPECT_LT(made[i - 1].key, StartAfterForRow(made[i].row));
      EXPECT_LT(VersionKey(made[i - 1].row), VersionKey(made[i].row));
    }
  }
  DecodedKey d;
  ASSERT_TRUE(DecodeKey(VersionKey("r"), &d));
  EXPECT_TRUE(d.is_version);
  EXPECT_FALSE(DecodeKey("r", &d));
  EXPECT_FALSE(DecodeKey(RowPrefix("r") + "\x02x", &d));
}

}  // namespace
}  // namespace strata::cluster::rados_keys
