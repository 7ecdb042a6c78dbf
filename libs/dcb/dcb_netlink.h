// DcbDevice over DCB netlink (RTM_GETDCB / RTM_SETDCB, the IEEE commands), through libnl,
// in the calling thread's network namespace.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

struct nlmsghdr;

#include "libs/dcb/dcb_config.h"

namespace fabric::pfc {

std::unique_ptr<DcbDevice> make_netlink_dcb_device();

// A change notification from the DCB multicast group (RTNLGRP_DCB): the kernel sends the
// device's whole IEEE state after every successful set, whoever made it.
struct DcbEvent {
  std::string dev;
  DcbState state;
};

// Listens on RTNLGRP_DCB and calls `on_event` for each notification about `dev` (every
// device when empty), until `keep_going` returns false (checked at least every
// `poll_interval`) or `on_event` returns false.
Result<void> watch_dcb(const std::string& dev, const std::function<bool(const DcbEvent&)>& on_event,
                       const std::function<bool()>& keep_going,
                       std::chrono::milliseconds poll_interval = std::chrono::milliseconds(200));

// Message encoding and decoding without a socket, for tests.
namespace detail {
// Decodes an IEEE_GET reply, a DCB notification, or an IEEE_SET request (same layout).
Result<DcbState> decode_state(const struct nlmsghdr* hdr);
// The whole RTM_SETDCB message for DCB_CMD_IEEE_SET or DCB_CMD_IEEE_DEL.
Result<std::vector<uint8_t>> build_ieee_request(const std::string& dev, uint8_t cmd,
                                                const DcbChange& change,
                                                const std::vector<AppEntry>& apps);
} // namespace detail

} // namespace fabric::pfc
