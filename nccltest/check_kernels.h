// The checks' device kernels (check_kernels.cu) loaded into the current CUDA context with
// the driver API, which is opened with dlopen and wrapped here once: a node without a
// driver, or a build without the kernels, gets an Error that says why, and the checks run
// on the host instead (data_check.h).
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "nccltest/check_math.h"
#include "nccltest/check_plan.h"
#include "nccltest/collectives.h"

namespace fabric::nccltest::nccl {

class CheckKernels {
public:
  // Loads the embedded fatbin into the calling thread's current context (the engine's
  // device, after cudaSetDevice). kNotBuilt without kernels, kUnsupported without a
  // driver or a GPU the fatbin fits.
  static Result<std::unique_ptr<CheckKernels>> load();
  ~CheckKernels();
  CheckKernels(const CheckKernels&) = delete;
  CheckKernels& operator=(const CheckKernels&) = delete;

  // One launch of the plan (check_plan.h) over `region`, this rank's whole input or
  // output, queued on `stream` (a cudaStream_t) and not waited for.
  Result<void> fill(const check_math::Params& params, DataType type, void* region,
                    const CheckLaunch& launch, void* stream) const;
  // Adds the launch's wrong elements to result[0] and lowers result[1] to the first wrong
  // index (two unsigned 64-bit integers in device memory).
  Result<void> verify(const check_math::Params& params, DataType type, const void* region,
                      const CheckLaunch& launch, unsigned long long* result, void* stream) const;

private:
  struct Module;
  explicit CheckKernels(std::unique_ptr<Module> module);
  std::unique_ptr<Module> module_;
};

} // namespace fabric::nccltest::nccl
