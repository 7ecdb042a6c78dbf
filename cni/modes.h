// The plugin's enumerated settings, shared by the config parser and the kernel layer.
#pragma once

// Mode (shared or exclusive), which every attachment record carries, lives with the record.
#include "libs/attachment_record/attachment_mode.h"

namespace fabric::cni {

// The kernel's macvlan modes (IFLA_MACVLAN_MODE); bridge lets pods on one parent talk.
enum class MacvlanMode { kBridge, kPrivate, kVepa, kPassthru };

// What ADD does when the pod's RoCE v2 GID does not appear in time.
enum class GidCheck { kRequire, kWarn, kOff };

} // namespace fabric::cni
