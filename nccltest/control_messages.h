// What the control channel's two ends share (control_channel.h): its deadlines and the
// reading and writing of its messages. Internal to fabric-nccltest's control channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/json.h"
#include "common/result.h"
#include "nccltest/watchdog.h"

namespace fabric::nccltest::control {

using namespace std::chrono_literals;

inline constexpr auto kHelloTimeout = 10s; // a connection must introduce itself within this
inline constexpr auto kFrameTimeout = 10s; // rank 0's messages to a rank, once begun
inline constexpr auto kSendTimeout = 10s;
inline constexpr auto kReplyTimeout = 1s;    // rank 0's I/O thread answering a hello or a proof
inline constexpr auto kAcceptPause = 100ms;  // out of descriptors: accepting rests this long
inline constexpr auto kPollInterval = 200ms; // how often the I/O threads look at their stop flag
inline constexpr std::size_t kMaxPendingExchanges = 64;

// A writer's document as one frame's text (without the trailing newline).
std::string frame(json::Writer& w);

Result<uint64_t> get_u64(const rapidjson::Value& doc, const char* name);
Result<std::string> get_str(const rapidjson::Value& doc, const char* name);
Result<Beat> parse_beat(const rapidjson::Value& doc);

std::string result_message(uint64_t seq, const std::vector<std::string>& data);
std::string abort_message(int exit_code, const std::string& reason);

} // namespace fabric::nccltest::control
