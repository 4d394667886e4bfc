#include "services/metrics/listen_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::metrics {
namespace {

using ::testing::HasSubstr;

TEST(ParseListenAddress, AcceptsIpv4AndPort) {
  auto parsed = ParseListenAddress("127.0.0.1:9464");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "127.0.0.1");
  EXPECT_EQ(parsed->port, 9464);
  EXPECT_EQ(parsed->ToString(), "127.0.0.1:9464");
  auto any = ParseListenAddress("0.0.0.0:0");
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->port, 0);
}

TEST(ParseListenAddress, RejectsMalformedAddresses) {
  for (const char* bad :
       {"", "9464", "127.0.0.1", "127.0.0.1:", "host:80", "127.0.0.1:65536",
        "127.0.0.1:-1", "127.0.0.1:8x", "300.0.0.1:80", ":80"}) {
    auto parsed = ParseListenAddress(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("--metrics-address"));
  }
}

}  // namespace
}  // namespace flowsched::metrics
