#include "probes/lint/lint_args.h"

#include "common/units.h"

namespace fabric::probes {

Result<LintOptions> make_lint_options(const LintArgs& args) {
  LintOptions options;
  if (args.dscp < 0 || args.dscp > 63) {
    return Error(ErrorCode::kInvalidArgument, "--dscp",
                 std::to_string(args.dscp) + " is out of range (0 to 63)");
  }
  options.dscp = static_cast<uint8_t>(args.dscp);
  if (args.expect_netns_mode == "shared") {
    options.expect_netns_mode = rdma::NetnsMode::kShared;
  } else if (args.expect_netns_mode == "exclusive") {
    options.expect_netns_mode = rdma::NetnsMode::kExclusive;
  } else if (!args.expect_netns_mode.empty()) {
    return Error(ErrorCode::kInvalidArgument, "--expect-netns-mode",
                 "'" + args.expect_netns_mode + "' is not shared or exclusive");
  }
  if (!args.min_memlock.empty()) {
    FABRIC_ASSIGN_OR_RETURN(options.min_memlock,
                            units::parse_size(args.min_memlock, "--min-memlock"));
  }
  return options;
}

} // namespace fabric::probes
