// Which of a node's GPUs a job uses, from the variables that choose them:
//
// NVIDIA_VISIBLE_DEVICES, set for a container by the NVIDIA container toolkit (or the
//   Kubernetes device plugin): "all", "none"/"void"/"" (no GPU), or a comma-separated list
//   of host indexes (nvidia-smi's numbering, which follows PCI bus order), GPU UUIDs
//   ("GPU-8932f937-..."), MIG devices given as GPU:INSTANCE or "MIG-GPU-<uuid>/G/C"
//   (both name their GPU); a path (/var/run/nvidia-container-devices) when the device
//   plugin passes the ids as the names of files in that folder.
// CUDA_VISIBLE_DEVICES, read by the CUDA runtime inside the job: indexes into the GPUs the
//   process sees or UUIDs (a unique prefix is enough), in the order CUDA numbers them.
//   As in CUDA, an entry that names no GPU ends the list: it and every entry after it are
//   ignored. Indexes count in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID; the default,
//   FASTEST_FIRST, gives the same order on nodes whose GPUs are alike).
//
// Without either, a container's GPUs are those in /proc/driver/nvidia/gpus (the toolkit
// hides the others there; sysfs still shows every GPU of the host). When the CUDA runtime
// is loaded it has already applied all of this: its device list is the answer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "libs/topology/pci_topology.h"

namespace fabric::topo {

// What the rules need to know of each GPU on the node, in PCI address order (host index).
struct GpuIdentity {
  PciAddress address;
  std::string uuid; // "GPU-..."; "" when the NVIDIA driver is not loaded
};

struct VisibilityInputs {
  std::optional<std::string> nvidia_visible_devices;
  std::optional<std::string> cuda_visible_devices;
  // When NVIDIA_VISIBLE_DEVICES names a folder: the names of the files in it.
  std::vector<std::string> nvidia_device_files;
  // The GPUs in /proc/driver/nvidia/gpus; nullopt when the driver does not publish it.
  std::optional<std::vector<PciAddress>> driver_gpus;
  // The CUDA runtime's devices in its own order; nullopt when it is not loaded.
  std::optional<std::vector<PciAddress>> cuda_devices;
};

struct VisibleGpus {
  // Indexes into the node's GPUs, in the order the job numbers them (its CUDA device 0
  // first).
  std::vector<std::size_t> gpus;
  // Where the choice came from, for people: "every GPU", "CUDA_VISIBLE_DEVICES=1,0", ...
  std::string source;
  // Entries that named no GPU, and what became of them.
  std::vector<std::string> notes;
};

VisibleGpus visible_gpus(const std::vector<GpuIdentity>& gpus, const VisibilityInputs& in);

} // namespace fabric::topo
