// A DcbDevice that behaves like the kernel's dcbnl, for tests of plan/apply/verify:
//   - an unknown netdev is ENODEV, a netdev without dcbnl ops is EOPNOTSUPP;
//   - a set of a part whose op the driver lacks succeeds and changes nothing (dcbnl
//     checks `if (ieee[...] && ops->ieee_setets)`): ignore(Part::kEts);
//   - a driver that fails the set answers in-band: the netlink ack is fine but the reply
//     carries the errno in one byte, and write() returns it as the netlink DcbDevice
//     does; the parts dcbnl ran before the failing op stay applied;
//   - APP add appends an entry unless the same (selector, protocol, priority) is there;
//     delete removes exact matches.
#pragma once

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libs/dcb/dcb_config.h"
#include "pfc/profile.h"

namespace fabric::pfc {

class FakeDcbDevice : public DcbDevice {
public:
  enum class Part { kPfc, kEts, kApp, kBuffer, kMaxrate };

  void add(const std::string& dev, DcbState state) { devices_[dev] = std::move(state); }
  // A netdev that exists but whose driver has no DCB support (veth, bridge).
  void add_without_dcb(const std::string& dev) { no_dcb_.insert(dev); }
  DcbState& state(const std::string& dev) { return devices_.at(dev); }

  // The driver lacks the set op for `part`: a set succeeds and changes nothing.
  void ignore(Part part) { ignored_.insert(part); }
  // The driver fails the next sets with -err, returned in-band (e.g. EINVAL). dcbnl runs
  // the driver's ops in the order ETS, maxrate, PFC, buffer, APP and stops at the first
  // that fails: by default the first op fails and nothing changes; with `at`, the parts
  // before `at` are applied first.
  void fail_in_band(int err, std::optional<Part> at = std::nullopt) {
    in_band_errno_ = err;
    fail_at_ = at;
  }
  void clear_failure() { in_band_errno_.reset(); }

  int reads() const { return reads_; }
  int writes() const { return static_cast<int>(written_.size()); }
  const std::vector<DcbChange>& written() const { return written_; }

  Result<DcbState> read(const std::string& dev) override {
    ++reads_;
    FABRIC_TRY(check_device(dev, "DCB_CMD_IEEE_GET"));
    return devices_.at(dev);
  }

  Result<void> write(const std::string& dev, const DcbChange& change) override {
    written_.push_back(change);
    FABRIC_TRY(check_device(dev, "DCB_CMD_IEEE_SET"));
    DcbState& s = devices_.at(dev);
    // A device that does not report a part has no op for it either.
    auto set = [&](Part part, auto& field, const auto& value) {
      if (value && field && !ignored_.count(part)) field = value;
    };
    auto sent = [&](Part part) {
      switch (part) {
      case Part::kEts: return change.ets.has_value();
      case Part::kMaxrate: return change.maxrate.has_value();
      case Part::kPfc: return change.pfc.has_value();
      case Part::kBuffer: return change.buffer.has_value();
      case Part::kApp: return !change.app_add.empty() || !change.app_del.empty();
      }
      return false;
    };
    auto fails = [&](Part part) {
      return in_band_errno_ && (!fail_at_ || (*fail_at_ == part && sent(part)));
    };
    for (Part part : {Part::kEts, Part::kMaxrate, Part::kPfc, Part::kBuffer, Part::kApp}) {
      if (fails(part)) return in_band_error(dev);
      switch (part) {
      case Part::kEts: set(part, s.ets, change.ets); break;
      case Part::kMaxrate: set(part, s.maxrate, change.maxrate); break;
      case Part::kPfc: set(part, s.pfc, change.pfc); break;
      case Part::kBuffer: set(part, s.buffer, change.buffer); break;
      case Part::kApp:
        if (ignored_.count(part)) break;
        // The IEEE delete, its own message, goes first (see DcbChange).
        for (const auto& app : change.app_del)
          s.apps.erase(std::remove(s.apps.begin(), s.apps.end(), app), s.apps.end());
        for (const auto& app : change.app_add) {
          if (std::find(s.apps.begin(), s.apps.end(), app) == s.apps.end()) s.apps.push_back(app);
        }
        std::sort(s.apps.begin(), s.apps.end());
        break;
      }
    }
    if (change.dcbx && s.dcbx) s.dcbx = change.dcbx;
    return Ok();
  }

private:
  // What the netlink DcbDevice returns for a non-zero in-band status.
  Error in_band_error(const std::string& dev) const {
    return Error::from_errno(*in_band_errno_, "DCB_CMD_IEEE_SET",
                             "the kernel accepted the message but the driver failed it "
                             "(in-band status -" +
                                 std::to_string(*in_band_errno_) + ")")
        .with_context(dev);
  }

  Result<void> check_device(const std::string& dev, const char* operation) const {
    if (no_dcb_.count(dev)) return Error::from_errno(EOPNOTSUPP, operation).with_context(dev);
    if (!devices_.count(dev)) {
      return Error::from_errno(ENODEV, operation).with_context("no network device " + dev);
    }
    return Ok();
  }

  std::map<std::string, DcbState> devices_;
  std::set<std::string> no_dcb_;
  std::set<Part> ignored_;
  std::optional<int> in_band_errno_;
  std::optional<Part> fail_at_;
  int reads_ = 0;
  std::vector<DcbChange> written_;
};

// What an mlx5 ConnectX port reports out of the box: no lossless priority, priority 0
// on TC1 and 1 on TC0 (mlx5's default map), ETS shares 13/12%, no APP entries.
inline DcbState mlx5_defaults() {
  DcbState s;
  s.pfc = PfcConfig{};
  s.pfc->pfc_cap = 8;
  s.ets = EtsConfig{};
  s.ets->ets_cap = 8;
  s.ets->tc_tx_bw = {13, 13, 13, 13, 12, 12, 12, 12};
  s.ets->tc_tsa.fill(static_cast<uint8_t>(Tsa::kEts));
  s.ets->prio_tc = {1, 0, 2, 3, 4, 5, 6, 7};
  s.ets->tc_reco_bw = s.ets->tc_tx_bw;
  s.ets->tc_reco_tsa = s.ets->tc_tsa;
  s.ets->reco_prio_tc = s.ets->prio_tc;
  s.buffer = BufferConfig{};
  s.buffer->buffer_size = {262016, 0, 0, 0, 0, 0, 0, 0};
  s.buffer->total_size = 1048576;
  s.maxrate = MaxRate{};
  s.dcbx = 0x09; // host, ieee
  return s;
}

inline AppEntry dscp(uint16_t value, uint8_t priority) {
  return AppEntry{static_cast<uint8_t>(AppSelector::kDscp), priority, value};
}

// The common RoCE profile: lossless priority 3, DSCP 26 -> 3 (RoCE) and 48 -> 6 (CNPs),
// ETS 50/50 between TC0 and TC3 with TC6 strict, ECN on priority 3 at both ends.
inline DesiredConfig roce_profile() {
  const auto ets = static_cast<uint8_t>(Tsa::kEts);
  const auto strict = static_cast<uint8_t>(Tsa::kStrict);
  DesiredConfig d;
  d.pfc_en = 1 << 3;
  d.prio_tc = PerPriority<uint8_t>{0, 0, 0, 3, 0, 0, 6, 0};
  d.tc_bw = PerTc<uint8_t>{50, 0, 0, 50, 0, 0, 0, 0};
  d.tc_tsa = PerTc<uint8_t>{ets, ets, ets, ets, ets, ets, strict, ets};
  d.apps = {dscp(26, 3), dscp(48, 6)};
  d.ecn_np = 1 << 3;
  d.ecn_rp = 1 << 3;
  return d;
}

} // namespace fabric::pfc
