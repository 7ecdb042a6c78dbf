#include "probes/tcp/tcp_args.h"

#include <cstdio>

#include "common/units.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {

Result<TcpPlan> make_tcp_plan(const TcpArgs& a) {
  TcpPlan p;
  if (a.mode == "bw") {
    p.latency = false;
  } else if (a.mode == "lat") {
    p.bandwidth = false;
  } else if (a.mode != "both") {
    return Error(ErrorCode::kInvalidArgument, "--mode", "'" + a.mode + "' is not bw, lat or both");
  }
  FABRIC_ASSIGN_OR_RETURN(uint16_t default_port, parse_agent_port(a.port));
  FABRIC_ASSIGN_OR_RETURN(p.agent, parse_endpoint(a.host, default_port, "HOST"));
  if (a.streams) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.streams, units::parse_uint(*a.streams, "--streams", 1, 128));
  }
  if (a.size) {
    // One --size for both tests: the write size and the ping-pong message size.
    FABRIC_ASSIGN_OR_RETURN(uint64_t size, units::parse_size(*a.size, "--size"));
    p.bw.write_size = size;
    p.lat.size = size;
  }
  if (a.duration && a.bytes) {
    return Error(ErrorCode::kInvalidArgument, "--bytes", "give either --duration or --bytes");
  }
  if (a.duration) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.duration, units::parse_duration(*a.duration, "--duration"));
  }
  if (a.bytes) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.bytes, units::parse_size(*a.bytes, "--bytes"));
    if (p.bw.bytes == 0) return Error(ErrorCode::kInvalidArgument, "--bytes", "must be positive");
  }
  if (a.reverse && a.bidir) {
    return Error(ErrorCode::kInvalidArgument, "--bidir", "give either --reverse or --bidir");
  }
  p.bw.direction = a.bidir     ? TcpDirection::kBidir
                   : a.reverse ? TcpDirection::kReverse
                               : TcpDirection::kForward;
  if (a.iters) {
    FABRIC_ASSIGN_OR_RETURN(p.lat.iters, units::parse_uint(*a.iters, "--iters", 1, 100'000'000));
  }
  if (a.warmup) {
    FABRIC_ASSIGN_OR_RETURN(p.lat.warmup, units::parse_uint(*a.warmup, "--warmup", 0, 100'000'000));
  }
  if (a.timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto t, units::parse_duration(*a.timeout, "--timeout"));
    p.bw.timeout = p.lat.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(t);
  }
  if (a.min_bw) {
    if (!p.bandwidth) {
      return Error(ErrorCode::kInvalidArgument, "--min-bw",
                   "needs the bandwidth test (--mode bw or both)");
    }
    FABRIC_ASSIGN_OR_RETURN(p.min_bw_gbps, units::parse_positive(*a.min_bw, "--min-bw"));
  }
  if (p.bandwidth) FABRIC_TRY(validate(p.bw));
  if (p.latency) FABRIC_TRY(validate(p.lat));
  FABRIC_ASSIGN_OR_RETURN(p.token, load_token(a.token_file));
  return p;
}

Result<void> tcp_verdict(const TcpPlan& plan, const TcpBwReport* bw) {
  if (bw == nullptr || !plan.min_bw_gbps || !(bw->avg_gbps() < *plan.min_bw_gbps)) return Ok();
  char detail[160];
  std::snprintf(detail, sizeof detail, "%.3f Gb/s is below --min-bw %g Gb/s", bw->avg_gbps(),
                *plan.min_bw_gbps);
  return Error(ErrorCode::kBelowThreshold, "tcp bandwidth to " + format_endpoint(plan.agent),
               detail);
}

} // namespace fabric::probes
