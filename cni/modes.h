// The plugin's enumerated settings, shared by the config parser and the kernel layer.
#pragma once

namespace fabric::cni {

// shared: a macvlan on the RoCE netdev, RDMA devices visible in every namespace.
// exclusive: the whole netdev and its RDMA device move into the pod.
enum class Mode { kShared, kExclusive };

// The kernel's macvlan modes (IFLA_MACVLAN_MODE); bridge lets pods on one parent talk.
enum class MacvlanMode { kBridge, kPrivate, kVepa, kPassthru };

// What ADD does when the pod's RoCE v2 GID does not appear in time.
enum class GidCheck { kRequire, kWarn, kOff };

} // namespace fabric::cni
