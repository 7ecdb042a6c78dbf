// A build without NCCL's headers (-DWITH_NCCL=OFF, or none under FABRIC_CUDA_ROOT): the
// nccl backend answers "not built" (exit 4).
#include "nccltest/nccl_backend.h"

namespace fabric::nccltest::nccl {
namespace {

Error not_built() {
  return Error(ErrorCode::kNotBuilt, "the nccl backend",
               "this fabric-nccltest was built without NCCL")
      .with_hint("rebuild with NCCL and the CUDA runtime under FABRIC_CUDA_ROOT (-DWITH_NCCL=ON)");
}

} // namespace

bool built() {
  return false;
}
int headers_version() {
  return 0;
}
Availability probe() {
  return {false, 0, "built without NCCL", 0};
}
Result<DeviceFacts> describe_device(int) {
  return not_built();
}
Result<std::unique_ptr<Engine>> make_engine(Group&, EngineSetup&) {
  return not_built();
}
int library_version() {
  return 0;
}
Result<void> pairs_supported() {
  return not_built();
}

} // namespace fabric::nccltest::nccl
