// The CUDA runtime, loaded at run time (dlopen) rather than linked: one fabrickit binary
// runs on GPU and non-GPU nodes alike, and a missing GPU is a clear error ("no CUDA
// device") at the moment a GPU is asked for, never a loader failure at start-up. Which
// libcudart is loaded follows the driver's CUDA version (cuda_library.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/cuda_library.h"
#include "common/result.h"

namespace fabric::cuda {

struct DeviceSummary {
  int index = 0;
  std::size_t total_memory = 0; // bytes
  std::string pci_bus_id;       // "0000:3b:00.0"
};

// libcudart's dlopen handle, loaded once: the newest runtime the driver supports, searched
// for as cuda_library.h says; nullptr when none fits (runtime_library_problem() says why).
// For callers that need more of its entry points.
void* runtime_library();
std::string runtime_library_problem();
// The file or soname loaded, "" when none.
std::string runtime_library_path();

// cuDriverGetVersion from libcuda.so.1 (1000 * major + 10 * minor); 0 without a driver.
int driver_version();
// The GPUs the driver sees (cuInit, cuDeviceGetCount), whatever the runtime: 0 without a
// driver or a device. Tells "no GPU here" from "a GPU, but no runtime or NCCL to use it".
int driver_device_count();

// The folders searched for libcudart and libnccl, from this process's environment.
SearchDirs library_search_dirs_here();

// Number of CUDA devices visible to this process. Errors: kNotBuilt when the runtime
// library cannot be loaded; kUnsupported "no CUDA device" when it loads but sees none.
Result<int> device_count();

Result<DeviceSummary> describe_device(int index);

// The PCI address of device `index` as the runtime prints it ("0000:3B:00.0"), without
// making it current or creating a context: cheap enough to list every device.
Result<std::string> pci_bus_id(int index);
// Every visible device's address, in CUDA's device order (after CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER). Errors as device_count().
Result<std::vector<std::string>> pci_bus_ids();

// Allocates and frees `bytes` of device memory on `index`: proves the device usable.
Result<void> check_allocation(int index, std::size_t bytes);

} // namespace fabric::cuda
