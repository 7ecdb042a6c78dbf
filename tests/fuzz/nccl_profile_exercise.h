// What the NCCL profiler's file parser must hold for any input, shared by the libFuzzer
// target (nccl_profile_fuzz.cpp) and the unit test that replays its seed corpus: a clean
// error or a profile within the limits whose numbers are consistent, and that the plugin's
// own writer renders back into the same profile.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "exporters/nccl_profiler/profile_format.h"

namespace fabric::nccl_profiler {

// Small limits, so that the fuzzer reaches them.
inline ParseLimits exercise_limits() {
  ParseLimits limits;
  limits.max_bytes = 64 << 10;
  limits.max_comms = 16;
  limits.max_cells = 64;
  return limits;
}

// The invariant the input broke, or none; `accepted` says whether it parsed.
inline std::optional<std::string> exercise_profile_parser(std::string_view input,
                                                          bool* accepted = nullptr) {
  const ParseLimits limits = exercise_limits();
  auto parsed = parse_profile(input, "input", limits);
  if (accepted != nullptr) *accepted = parsed.ok();
  if (!parsed.ok()) {
    if (parsed.error().message().find("input") == std::string::npos)
      return "an error that does not name the file: " + parsed.error().message();
    return std::nullopt;
  }
  const ProcessProfile& p = *parsed;
  if (p.comms.size() > limits.max_comms) return std::string("more communicators than allowed");
  std::size_t cells = 0;
  for (const auto& comm : p.comms) {
    if (comm.nranks < 0 || comm.rank < 0 || (comm.nranks > 0 && comm.rank >= comm.nranks))
      return std::string("a rank out of range");
    for (const auto& cell : comm.cells) {
      if (cell.timed_ops > cell.ops || cell.timed_bytes > cell.bytes)
        return std::string("more timed than done");
      ++cells;
    }
  }
  if (cells > limits.max_cells) return std::string("more cells than allowed");
  if (p.pid <= 0 || p.interval_ms <= 0 || p.interval_ms > kMaxIntervalMs)
    return std::string("a header out of range");
  // What was accepted renders to a file that reads back the same.
  std::string rendered = render_profile(p);
  auto again = parse_profile(rendered, "rendered", limits);
  if (!again.ok()) return "the rendered profile does not parse: " + again.error().message();
  if (render_profile(*again) != rendered) return std::string("rendering is not stable");
  return std::nullopt;
}

} // namespace fabric::nccl_profiler
