#include <cerrno>

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/result.h"

namespace fabric {
namespace {

TEST(Error, MessageListsContextOutermostFirstThenOperationDetailAndErrno) {
  Error e = Error::from_errno(ENODEV, "ibv_query_port", "port 1");
  e.with_context("rxe0").with_context("listing devices");
  EXPECT_EQ(e.message(), "listing devices: rxe0: ibv_query_port: port 1: No such device");
  EXPECT_EQ(e.sys_errno(), ENODEV);
}

TEST(Error, ErrnoDecidesTheCode) {
  EXPECT_EQ(Error::from_errno(EPERM, "x").code(), ErrorCode::kPermission);
  EXPECT_EQ(Error::from_errno(EACCES, "x").code(), ErrorCode::kPermission);
  EXPECT_EQ(Error::from_errno(ENODEV, "x").code(), ErrorCode::kNotFound);
  EXPECT_EQ(Error::from_errno(EOPNOTSUPP, "x").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(Error::from_errno(EEXIST, "x").code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(Error::from_errno(ETIMEDOUT, "x").code(), ErrorCode::kTimeout);
  EXPECT_EQ(Error::from_errno(EIO, "x").code(), ErrorCode::kSystem);
}

TEST(Error, HintIsKeptOutOfTheMessage) {
  Error e = Error(ErrorCode::kPermission, "ibv_reg_mr").with_hint("raise the memlock limit");
  EXPECT_EQ(e.message(), "ibv_reg_mr");
  EXPECT_EQ(e.hint(), "raise the memlock limit");
}

TEST(Error, ExitStatusesFollowTheProjectConvention) {
  EXPECT_EQ(exit_status_for(ErrorCode::kInvalidArgument), 1);
  EXPECT_EQ(exit_status_for(ErrorCode::kSystem), 2);
  EXPECT_EQ(exit_status_for(ErrorCode::kNotFound), 2);
  EXPECT_EQ(exit_status_for(ErrorCode::kPeerIncompatible), 2);
  EXPECT_EQ(exit_status_for(ErrorCode::kBelowThreshold), 3);
  EXPECT_EQ(exit_status_for(ErrorCode::kUnsupported), 4);
  EXPECT_EQ(exit_status_for(ErrorCode::kNotBuilt), 4);
}

TEST(Error, CniCodesFollowTheSpec) {
  EXPECT_EQ(cni_code_for(ErrorCode::kIncompatibleVersion), 1);
  EXPECT_EQ(cni_code_for(ErrorCode::kInvalidEnvironment), 4);
  EXPECT_EQ(cni_code_for(ErrorCode::kDecode), 6);
  EXPECT_EQ(cni_code_for(ErrorCode::kInvalidConfig), 7);
  EXPECT_EQ(cni_code_for(ErrorCode::kTryAgain), 11);
  // Everything of our own is a plugin code, >= 100 by the spec's reservation.
  for (ErrorCode c : {ErrorCode::kNotFound, ErrorCode::kPermission, ErrorCode::kSystem,
                      ErrorCode::kTimeout, ErrorCode::kUnsupported, ErrorCode::kInternal}) {
    EXPECT_GE(cni_code_for(c), 100) << error_code_name(c);
  }
}

Result<int> parse_positive(int v) {
  if (v <= 0) return Error(ErrorCode::kInvalidArgument, "--count", "must be positive");
  return v;
}

Result<int> doubled(int v) {
  FABRIC_ASSIGN_OR_RETURN(int x, parse_positive(v).context("doubling"));
  return 2 * x;
}

Result<void> check(int v) {
  FABRIC_TRY(doubled(v));
  return Ok();
}

TEST(Result, ValuesPassThroughAndErrorsReturnEarlyWithContext) {
  ASSERT_TRUE(doubled(4).ok());
  EXPECT_EQ(*doubled(4), 8);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "doubling: --count: must be positive");
  EXPECT_TRUE(check(1).ok());
  Result<void> failed = check(0);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
}

} // namespace
} // namespace fabric
