// SharedCeph (local_ceph.h): one memstore cluster for every test of the
// binary, started by a gtest environment before the first test.
#include <gtest/gtest.h>

#include "cluster/local_ceph.h"

namespace strata::cluster {
namespace {

LocalCeph* shared_ceph = nullptr;

class CephEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto started = LocalCeph::Start();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    shared_ceph = started->release();
  }
  void TearDown() override {
    delete shared_ceph;
    shared_ceph = nullptr;
  }
};
[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new CephEnvironment);

}  // namespace

LocalCeph* SharedCeph() { return shared_ceph; }

}  // namespace strata::cluster
