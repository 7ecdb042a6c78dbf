#include "nccltest/data_check.h"

#include <algorithm>
#include <vector>

namespace fabric::nccltest {
namespace {

// Calls step(first element, staging span) over `count` elements of `elt` bytes, in chunks
// of whole elements that never exceed kCheckChunkBytes, through one staging buffer, and
// on_chunk after each.
template <typename Step>
Result<void> for_each_chunk(std::size_t count, std::size_t elt, const OnChunk& on_chunk,
                            Step&& step) {
  const std::size_t per_chunk = std::max<std::size_t>(kCheckChunkBytes / elt, 1);
  std::vector<std::byte> staging(std::min(count, per_chunk) * elt);
  for (std::size_t first = 0; first < count; first += per_chunk) {
    const std::size_t n = std::min(per_chunk, count - first);
    FABRIC_TRY(step(first, std::span<std::byte>(staging.data(), n * elt)));
    if (on_chunk) on_chunk();
  }
  return Ok();
}

} // namespace

Result<void> Engine::fill_on_device(const CollectiveCall&, const CheckSpec&, const OnLaunch&) {
  return Error(ErrorCode::kUnsupported, "generating the input on the device",
               "this engine has no device checks");
}

Result<CheckOutcome> Engine::verify_on_device(const CollectiveCall&, const CheckSpec&,
                                              const OnLaunch&) {
  return Error(ErrorCode::kUnsupported, "verifying the output on the device",
               "this engine has no device checks");
}

CheckSpec check_spec(const Engine& engine, const CollectiveCall& call, uint64_t seed) {
  CheckSpec spec;
  spec.collective = call.collective;
  spec.type = call.type;
  spec.op = call.op;
  spec.root = call.root;
  spec.nranks = engine.size();
  spec.rank = engine.rank() + call.local;
  spec.seed = seed;
  spec.counts = call.counts;
  return spec;
}

Result<void> fill_checked_input(Engine& engine, const CollectiveCall& call, const CheckSpec& spec,
                                const OnChunk& on_chunk) {
  if (engine.has_device_checks()) {
    return engine.fill_on_device(call, spec, on_chunk);
  }
  const std::size_t elt = data_type_size(call.type);
  return for_each_chunk(call.counts.send, elt, on_chunk,
                        [&](std::size_t first, std::span<std::byte> chunk) {
                          fill_input(spec, chunk, first);
                          return engine.copy_in(call, Engine::Region::kInput, first * elt, chunk);
                        });
}

Result<CheckOutcome> verify_checked_output(Engine& engine, const CollectiveCall& call,
                                           const CheckSpec& spec, const OnChunk& on_chunk) {
  if (engine.has_device_checks()) {
    return engine.verify_on_device(call, spec, on_chunk);
  }
  CheckOutcome total;
  if (!check_math::output_defined(make_params(spec))) return total;
  const std::size_t elt = data_type_size(call.type);
  FABRIC_TRY(for_each_chunk(call.counts.recv, elt, on_chunk,
                            [&](std::size_t first, std::span<std::byte> chunk) -> Result<void> {
                              FABRIC_TRY(engine.copy_out(call, Engine::Region::kOutput, first * elt,
                                                         chunk));
                              merge_outcome(total, verify_output(spec, chunk, first));
                              return Ok();
                            }));
  return total;
}

Result<void> corrupt_first_output(Engine& engine, const CollectiveCall& call) {
  if (call.counts.recv == 0) return Ok();
  std::vector<std::byte> element(data_type_size(call.type));
  FABRIC_TRY(engine.copy_out(call, Engine::Region::kOutput, 0, element));
  element[0] ^= std::byte{0x55};
  return engine.copy_in(call, Engine::Region::kOutput, 0, element);
}

} // namespace fabric::nccltest
