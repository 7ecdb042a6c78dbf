// The nccl backend: NCCL's collectives on one GPU per rank. NCCL and the CUDA runtime are
// loaded at run time (nccl_api.h), so the same binary starts on CPU-only nodes and says
// "no CUDA device" there; a build without NCCL's headers answers "not built".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "nccltest/engine.h"
#include "nccltest/group.h"
#include "nccltest/nccl_log.h"

namespace fabric::nccltest::nccl {

bool built();
// NCCL_VERSION_CODE of the headers built against; 0 without NCCL.
int headers_version();

struct Availability {
  bool usable = false;
  int device_count = 0;
  std::string reason;  // "2 CUDA devices visible" or why not ("no CUDA device: ...")
  int driver_gpus = 0; // GPUs the driver sees, even where the runtime or NCCL cannot run
};
// Whether this process can run the nccl backend: a visible CUDA device, a CUDA runtime
// that fits the driver, and a loadable libnccl.
Availability probe();

struct DeviceFacts {
  std::string name;       // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id; // "0000:07:00"
  uint64_t free_memory = 0;
  int compute_capability = 0; // 90 for sm_90
};
Result<DeviceFacts> describe_device(int device);

struct EngineSetup {
  std::vector<int> devices{0};    // the GPUs this process drives, one rank each (-g x -t)
  int threads = 1;                // -t: threads driving them, devices.size() / threads each
  int registration = 0;           // -R: 0 none, 1 ncclCommRegister, 2 symmetric windows
  bool stream_null = false;       // -y 1: CUDA's legacy default stream
  int cta_policy = -1;            // -x: ncclConfig_t's CTAPolicy; -1 NCCL's default
  bool memory_report = false;     // -M 1: measure what the communicators take
  std::vector<std::string> notes; // filled: what -R and -x fell back to, the buffers, streams
  std::int64_t init_memory = 0;   // filled with -M 1: the largest drop of free memory over
                                  // one GPU while the communicators were made
};

// Creates the communicator over `group`'s processes, devices.size() ranks each (process p's
// GPUs are ranks p * devices.size() ...): rank 0 calls ncclGetUniqueId, the id travels
// through `group`, every process creates its ranks' communicators in one NCCL group.
Result<std::unique_ptr<Engine>> make_engine(Group& group, EngineSetup& setup);

// ncclGetVersion() once NCCL is loaded; 0 before or without it.
int library_version();

// Whether the loaded NCCL has what --pairs needs (ncclCommSplit), before any rank starts.
Result<void> pairs_supported();

} // namespace fabric::nccltest::nccl
