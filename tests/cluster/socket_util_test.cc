#include "cluster/socket_util.h"

#include <gtest/gtest.h>

#include "util/status_matchers.h"

namespace strata::cluster {
namespace {

TEST(EndpointTest, Parses) {
  Result<Endpoint> e = Endpoint::Parse("http://127.0.0.1:2379");
  ASSERT_OK(e);
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 2379);
  EXPECT_EQ(Endpoint::Parse("localhost:1/")->host, "localhost");
  for (const char* bad : {"", "localhost", ":80", "host:0", "host:65536", "host:x",
                          "https://host:2379", "http://host:2379/v3", "host:-1"}) {
    Result<Endpoint> r = Endpoint::Parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    }
  }
}

}  // namespace
}  // namespace strata::cluster
