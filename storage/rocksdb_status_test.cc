#include "storage/rocksdb_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/status.h"
#include "services/common/status_matchers.h"

namespace flowsched::storage::internal {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

TEST(RocksDbStatusTest, MapsCodesAndKeepsMessage) {
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::OK(), "ctx"), IsOk());
  EXPECT_THAT(
      FromRocksDbStatus(rocksdb::Status::Corruption("bad block"), "ctx"),
      StatusIs(absl::StatusCode::kDataLoss, "ctx: Corruption: bad block"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::IOError("disk gone"), "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, "disk gone"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::Busy("busy"), "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, "busy"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::TryAgain("later"), "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, "later"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::TimedOut("slow"), "ctx"),
              StatusIs(absl::StatusCode::kUnavailable, "slow"));
  EXPECT_THAT(
      FromRocksDbStatus(rocksdb::Status::InvalidArgument("bad arg"), "ctx"),
      StatusIs(absl::StatusCode::kInvalidArgument, "bad arg"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::NotSupported("nope"), "ctx"),
              StatusIs(absl::StatusCode::kInternal, "nope"));
  EXPECT_THAT(FromRocksDbStatus(rocksdb::Status::NotFound("gone"), "ctx"),
              StatusIs(absl::StatusCode::kInternal, "gone"));
}

}  // namespace
}  // namespace flowsched::storage::internal
