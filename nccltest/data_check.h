// The data of one checked operation on one rank: its input generated before the
// collective and its output verified after, on the device when the engine can (the nccl
// backend's kernels), else on the host through one staging buffer of at most
// kCheckChunkBytes, whatever the message size. `on_chunk` runs after every chunk (and
// after every bounded device launch), so that a long check keeps beating the watchdog.
#pragma once

#include <functional>

#include "nccltest/check_values.h"
#include "nccltest/engine.h"

namespace fabric::nccltest {

using OnChunk = std::function<void()>;

// The spec of `call` for this engine's rank.
CheckSpec check_spec(const Engine& engine, const CollectiveCall& call, uint64_t seed);

Result<void> fill_checked_input(Engine& engine, const CollectiveCall& call, const CheckSpec& spec,
                                const OnChunk& on_chunk = {});
Result<CheckOutcome> verify_checked_output(Engine& engine, const CollectiveCall& call,
                                           const CheckSpec& spec, const OnChunk& on_chunk = {});

// Test-only fault: flips bits of this rank's first output element, wherever it lives.
Result<void> corrupt_first_output(Engine& engine, const CollectiveCall& call);

} // namespace fabric::nccltest
