// The lossless-Ethernet (DCB) configuration of one netdev, as plain data: what
// `fabric-pfc show` prints, what a profile asks for, and what the kernel boundary
// (DcbDevice) reads and writes. No kernel headers here: the codec (dcb_codec.h) maps
// these to the kernel's structs (ieee_pfc, ieee_ets, dcb_app, dcbnl_buffer, ieee_maxrate).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::pfc {

inline constexpr int kPriorities = 8;     // 802.1p priorities 0-7
inline constexpr int kTrafficClasses = 8; // IEEE_8021QAZ_MAX_TCS

template <typename T> using PerPriority = std::array<T, kPriorities>;
template <typename T> using PerTc = std::array<T, kTrafficClasses>;

// IEEE 802.1Qbb PFC (struct ieee_pfc).
struct PfcConfig {
  uint8_t pfc_cap = 0;                 // how many priorities may be lossless at once
  uint8_t pfc_en = 0;                  // bit p set: priority p is lossless
  uint8_t mbc = 0;                     // MACsec bypass capability
  uint16_t delay = 0;                  // allowance for cable delay, in bit times
  PerPriority<uint64_t> requests{};    // pause frames sent, per priority (counters)
  PerPriority<uint64_t> indications{}; // pause frames received, per priority (counters)
};

// Transmission selection algorithms (IEEE_8021QAZ_TSA_*).
enum class Tsa : uint8_t { kStrict = 0, kCbShaper = 1, kEts = 2, kVendor = 255 };

// IEEE 802.1Qaz ETS (struct ieee_ets).
struct EtsConfig {
  uint8_t willing = 0;
  uint8_t ets_cap = 0; // number of traffic classes the device supports
  uint8_t cbs = 0;
  PerTc<uint8_t> tc_tx_bw{}; // percent, summing to 100 over ETS classes
  PerTc<uint8_t> tc_rx_bw{};
  PerTc<uint8_t> tc_tsa{}; // Tsa values
  PerPriority<uint8_t> prio_tc{};
  PerTc<uint8_t> tc_reco_bw{};
  PerTc<uint8_t> tc_reco_tsa{};
  PerPriority<uint8_t> reco_prio_tc{};
};

// Application priority selectors (IEEE_8021QAZ_APP_SEL_*).
enum class AppSelector : uint8_t {
  kEthertype = 1,
  kStream = 2, // TCP/SCTP port
  kDgram = 3,  // UDP/DCCP port
  kAny = 4,    // TCP/SCTP/UDP/DCCP port
  kDscp = 5,
};

// One APP table entry (struct dcb_app): traffic matching selector/protocol gets priority.
// For kDscp, protocol is the DSCP value (0-63).
struct AppEntry {
  uint8_t selector = 0;
  uint8_t priority = 0;
  uint16_t protocol = 0;
  auto operator<=>(const AppEntry&) const = default;
};

// Port buffer configuration (struct dcbnl_buffer).
struct BufferConfig {
  PerPriority<uint8_t> prio2buffer{};
  std::array<uint32_t, 8> buffer_size{}; // bytes
  uint32_t total_size = 0;               // bytes, read-only
};

// Per-TC transmit rate limit (struct ieee_maxrate), in the kernel's unit: kbit/s
// (0 = unlimited).
struct MaxRate {
  PerTc<uint64_t> tc_maxrate{};
};

// Everything DCB netlink reports for one device. An optional that is empty means the
// device did not report that attribute (its driver lacks the op).
struct DcbState {
  std::optional<PfcConfig> pfc;
  std::optional<EtsConfig> ets;
  std::vector<AppEntry> apps; // sorted
  std::optional<BufferConfig> buffer;
  std::optional<MaxRate> maxrate;
  std::optional<uint8_t> dcbx; // DCB_CAP_DCBX_* flags
  // What the link partner (switch) advertised over LLDP/DCBX, when known.
  std::optional<PfcConfig> peer_pfc;
  std::optional<EtsConfig> peer_ets;
  std::vector<AppEntry> peer_apps;
};

// One IEEE delete (DCB_CMD_IEEE_DEL) for removed APP entries, sent first, then one IEEE
// set (DCB_CMD_IEEE_SET). Fields left empty are not sent.
struct DcbChange {
  std::optional<PfcConfig> pfc;
  std::optional<EtsConfig> ets;
  std::optional<MaxRate> maxrate;
  std::optional<BufferConfig> buffer;
  std::vector<AppEntry> app_add;
  std::vector<AppEntry> app_del;
  std::optional<uint8_t> dcbx; // DCB_CMD_SDCBX
  bool empty() const {
    return !pfc && !ets && !maxrate && !buffer && app_add.empty() && app_del.empty() && !dcbx;
  }
};

// The kernel boundary: DCB netlink for one device at a time. The netlink implementation
// talks RTM_GETDCB/RTM_SETDCB; tests use a fake that reproduces the kernel's quirks.
class DcbDevice {
public:
  virtual ~DcbDevice() = default;
  // Errors: kNotFound (ENODEV: no such netdev), kUnsupported (EOPNOTSUPP: the device
  // has no DCB support), kPermission (EPERM).
  virtual Result<DcbState> read(const std::string& dev) = 0;
  // Sends the change. The IEEE set's real outcome comes back in-band (a one-byte
  // attribute in the reply); a non-zero one is returned as an Error naming it. A driver
  // without an op silently skips that part: only a read-back can tell.
  virtual Result<void> write(const std::string& dev, const DcbChange& change) = 0;
};

} // namespace fabric::pfc
