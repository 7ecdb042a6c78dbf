// The network-plumbing-wg device-info file (device-info spec 1.1.0) that Multus copies
// into the pod's k8s.v1.cni.cncf.io/network-status annotation:
//   {"type": "pci", "version": "1.1.0",
//    "pci": {"pci-address": "0000:03:00.1", "rdma-device": "mlx5_2"}}
// The path comes from runtimeConfig.CNIDeviceInfoFile. A device plugin may have written
// the file already (with fields of its own); we merge into it instead of clobbering it.
#pragma once

#include <string>

#include "common/result.h"

namespace fabric::cni {

inline constexpr const char* kDeviceInfoVersion = "1.1.0";

struct DeviceInfo {
  std::string pci_address; // empty for a parent without PCI (rxe, veth): left out
  std::string rdma_device;
};

// Merges `info` into the JSON document `existing` ("" = no file yet) and returns the new
// text. An existing file that is not a JSON object is an error: it is someone else's data.
Result<std::string> merge_device_info(std::string_view existing, const DeviceInfo& info);

struct DeviceInfoWrite {
  bool created = false; // the file did not exist before
};

// Reads, merges and atomically rewrites `path`.
Result<DeviceInfoWrite> write_device_info(const std::string& path, const DeviceInfo& info);

} // namespace fabric::cni
