// `fabric-probe tcp`'s flags as the user typed them, their check into a plan (which tests,
// with which options, against which agent), and the --min-bw verdict.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {

struct TcpArgs {
  std::string host; // HOST or HOST:PORT
  std::string mode = "both";
  std::optional<std::string> port;
  std::optional<std::string> streams;
  std::optional<std::string> size;
  std::optional<std::string> duration;
  std::optional<std::string> bytes;
  std::optional<std::string> iters;
  std::optional<std::string> warmup;
  std::optional<std::string> timeout;
  std::optional<std::string> min_bw;
  std::optional<std::string> token_file; // else $FABRIC_PROBE_TOKEN_FILE
  bool reverse = false;
  bool bidir = false;
  bool json = false;
};

struct TcpPlan {
  Endpoint agent;
  bool bandwidth = true;
  bool latency = true;
  TcpBwOptions bw;
  TcpLatOptions lat;
  std::optional<double> min_bw_gbps;
  std::optional<Token> token; // presented to an agent that asks for one
};

// Reads the token file too. Every bad value or combination is an error that names its flag.
Result<TcpPlan> make_tcp_plan(const TcpArgs& args);

// Below threshold when the bandwidth test received less than --min-bw, else Ok.
Result<void> tcp_verdict(const TcpPlan& plan, const TcpBwReport* bw);

} // namespace fabric::probes
