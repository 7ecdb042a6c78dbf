// The CUDA runtime, loaded at run time (dlopen) rather than linked: one fabrickit binary
// runs on GPU and non-GPU nodes alike, and a missing GPU is a clear error ("no CUDA
// device") at the moment a GPU is asked for, never a loader failure at start-up.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::cuda {

struct DeviceSummary {
  int index = 0;
  std::size_t total_memory = 0; // bytes
  std::string pci_bus_id;       // "0000:3b:00.0"
};

// libcudart's dlopen handle, loaded once (sonames first, then the toolkit's own folder);
// nullptr when it is not installed. For callers that need more of its entry points.
void* runtime_library();

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
