#include "libs/host_knobs/host_knobs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>

#include "common/fd.h"
#include "common/rdma_sysfs.h"
#include "common/sysfs.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::pfc {
namespace {

constexpr std::string_view kEcnNp = "ecn.roce_np";
constexpr std::string_view kEcnRp = "ecn.roce_rp";
constexpr std::string_view kCmTos = "rdma.cm_default_tos";
constexpr std::string_view kCmMode = "rdma.cm_default_roce_mode";
constexpr std::string_view kRdmaTrafficClass = "rdma.traffic_class";

// Relative to the sys root.
std::string ecn_dir(const std::string& dev, std::string_view point) {
  return "class/net/" + dev + "/ecn/" + std::string(point) + "/enable";
}
std::string traffic_class_file(const std::string& rdma_device, uint32_t port) {
  return "class/infiniband/" + rdma_device + "/tc/" + std::to_string(port) + "/traffic_class";
}

// The port of `rdma_device` that serves `dev`: the one whose own netdev is `dev`, else
// the device's only port. The detail of the error says why none can be chosen.
Result<uint32_t> port_serving(const SysfsReader& sys, const std::string& rdma_device,
                              const std::string& dev) {
  if (auto port = rdma::sysfs_port_of_netdev(sys, rdma_device, dev)) return *port;
  auto ports = rdma::list_sysfs_ports(sys, rdma_device).value_or(std::vector<uint32_t>{});
  if (ports.size() == 1) return ports.front();
  const std::string where = "/sys/class/infiniband/" + rdma_device + "/ports";
  if (ports.empty()) return Error(ErrorCode::kNotFound, rdma_device, "no ports in " + where);
  return Error(ErrorCode::kNotFound, rdma_device,
               std::to_string(ports.size()) + " ports in " + where + " and none names " + dev +
                   " as its netdev");
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// One write(2) of the whole value: sysfs and configfs take an attribute in one write
// and report a rejected value as that write's errno.
Result<void> write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "opening " + path + " for writing");
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) return Error::from_errno(errno, "writing '" + text + "' to " + path);
  if (static_cast<size_t>(n) != text.size()) {
    return Error(ErrorCode::kSystem, "writing '" + text + "' to " + path, "short write");
  }
  if (::close(fd.release()) != 0) return Error::from_errno(errno, "closing " + path);
  return Ok();
}

// All eight files of an ECN point as a bitmask; nullopt when the folder is absent.
Result<std::optional<uint8_t>> read_ecn(const SysfsReader& sys, const std::string& dev,
                                        std::string_view point) {
  std::string dir = ecn_dir(dev, point.substr(point.find('.') + 1));
  if (!sys.exists(dir)) return std::optional<uint8_t>();
  uint8_t mask = 0;
  for (int p = 0; p < kPriorities; ++p) {
    std::string file = dir + "/" + std::to_string(p);
    FABRIC_ASSIGN_OR_RETURN(uint64_t on, sys.read_u64(file));
    if (on > 1) {
      return Error(ErrorCode::kDecode, "reading " + sys.path(file),
                   "expected 0 or 1, found " + std::to_string(on));
    }
    if (on) mask = static_cast<uint8_t>(mask | 1u << p);
  }
  return std::optional<uint8_t>(mask);
}

Result<void> write_ecn(const SysfsReader& sys, const std::string& dev, std::string_view point,
                       uint8_t from, uint8_t to) {
  std::string dir = ecn_dir(dev, point.substr(point.find('.') + 1));
  // Only the priorities whose bit differs are written. (Written as an XOR mask: GCC 12.2
  // at -O2 miscompiled the equivalent `bool want = ...; if (want == had) continue;` so
  // that a bit going from off to on was never written.)
  const unsigned changed = static_cast<unsigned>(from ^ to);
  for (int p = 0; p < kPriorities; ++p) {
    if ((changed >> p & 1u) == 0) continue;
    const char* value = (to >> p & 1u) != 0 ? "1" : "0";
    FABRIC_TRY(write_file(sys.path(dir + "/" + std::to_string(p)), value));
  }
  return Ok();
}

// The mlx5 traffic_class file reads "Global tclass=106" (MLNX_OFED) or "tclass=106".
// Unset (empty, or tclass=-1) reads as 0, the class the device uses by default.
Result<uint8_t> parse_traffic_class(const std::string& text, const std::string& path) {
  auto bad = [&] {
    return Error(ErrorCode::kDecode, "reading " + path,
                 "expected 'tclass=N' or 'Global tclass=N', found '" + text + "'");
  };
  auto pos = text.find("tclass=");
  if (pos == std::string::npos) {
    for (char c : text) {
      if (!std::isspace(static_cast<unsigned char>(c))) return bad();
    }
    return uint8_t{0};
  }
  const char* begin = text.data() + pos + 7;
  const char* end = text.data() + text.size();
  int value = 0;
  auto [stop, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || value < -1 || value > 255) return bad();
  if (stop != end && !std::isspace(static_cast<unsigned char>(*stop))) return bad();
  return static_cast<uint8_t>(value < 0 ? 0 : value);
}

Result<uint8_t> parse_tos(const std::string& text, const std::string& path) {
  unsigned value = 0;
  auto [stop, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || stop != text.data() + text.size() || value > 255) {
    return Error(ErrorCode::kDecode, "reading " + path,
                 "expected a ToS byte (0-255), found '" + text + "'");
  }
  return static_cast<uint8_t>(value);
}

// The RDMA-CM configfs folder of one RDMA device, held for one read or write. The kernel
// creates sys/kernel/config/rdma_cm/RDMADEV (with ports/N inside) when it is mkdir'ed;
// the values live in RDMA-CM itself, so removing a folder we created loses nothing and
// leaves configfs as we found it.
class CmFolder {
public:
  CmFolder() = default;
  CmFolder(const CmFolder&) = delete;
  CmFolder& operator=(const CmFolder&) = delete;
  ~CmFolder() {
    if (created_) ::rmdir(dir_.c_str());
  }

  // Leaves available() false when configfs or rdma_cm is absent, or when the kernel
  // does not know the RDMA device (mkdir fails with ENODEV).
  Result<void> open(const std::string& sys_root, const std::string& rdma_device) {
    std::string base = sys_root + "/kernel/config/rdma_cm";
    if (rdma_device.empty() || !is_dir(base)) return Ok();
    std::string dir = base + "/" + rdma_device;
    if (!is_dir(dir)) {
      if (::mkdir(dir.c_str(), 0755) == 0) {
        created_ = true;
      } else if (errno == ENODEV || errno == ENOENT) {
        return Ok();
      } else if (errno != EEXIST) { // EEXIST: another process made it meanwhile; not ours
        int err = errno;
        Error e = Error::from_errno(err, "creating the RDMA-CM configfs folder " + dir);
        if (err == EPERM || err == EACCES) {
          e.with_hint("RDMA-CM defaults are read and set through configfs, which needs root");
        }
        return e;
      }
    }
    dir_ = dir;
    return Ok();
  }
  bool available() const { return !dir_.empty(); }
  std::string port_file(uint32_t port, const char* name) const {
    return dir_ + "/ports/" + std::to_string(port) + "/" + name;
  }

private:
  std::string dir_;
  bool created_ = false;
};

} // namespace

KnobSelection KnobSelection::of(const HostState& wanted) {
  KnobSelection s;
  s.ecn_np = wanted.ecn_np.has_value();
  s.ecn_rp = wanted.ecn_rp.has_value();
  s.cm_default_tos = wanted.cm_default_tos.has_value();
  s.cm_default_roce_mode = wanted.cm_default_roce_mode.has_value();
  s.rdma_traffic_class = wanted.rdma_traffic_class.has_value();
  return s;
}

std::string_view knob_outcome_name(KnobOutcome outcome) {
  switch (outcome) {
  case KnobOutcome::kApplied: return "applied";
  case KnobOutcome::kUnchanged: return "unchanged";
  case KnobOutcome::kNotAvailable: return "not_available";
  case KnobOutcome::kFailed: return "failed";
  }
  return "unknown";
}

const KnobResult* KnobReport::find(std::string_view attribute) const {
  for (const auto& k : knobs) {
    if (k.attribute == attribute) return &k;
  }
  return nullptr;
}

std::string knob_unavailable_reason(std::string_view attribute, const std::string& dev,
                                    const HostState& host) {
  const std::string& rdma_device = host.rdma_device;
  std::string why = "not available on this host (";
  if (attribute.starts_with("ecn.")) {
    why += "no /sys/class/net/" + dev + "/ecn/" + std::string(attribute.substr(4)) +
           "; the mlx5 driver provides it";
  } else if (rdma_device.empty()) {
    why += dev + " has no RDMA device; name one with rdma_device";
  } else if (!host.rdma_port) {
    why += "cannot tell which port of " + rdma_device + " serves " + dev + ": " +
           host.rdma_port_problem;
  } else if (attribute == kRdmaTrafficClass) {
    why += "no /sys/" + traffic_class_file(rdma_device, *host.rdma_port) +
           "; MLNX_OFED's mlx5 driver provides it";
  } else {
    why += "no RDMA-CM configfs folder for " + rdma_device +
           ": is configfs mounted on /sys/kernel/config and rdma_cm loaded?";
  }
  return why + ")";
}

HostKnobs::HostKnobs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

std::string HostKnobs::sys_root() const {
  return root_ == "/" ? "/sys" : root_ + "/sys";
}

Result<std::string> HostKnobs::rdma_device_of(const std::string& dev) const {
  SysfsReader sys(sys_root());
  FABRIC_ASSIGN_OR_RETURN(auto names, sys.list("class/net/" + dev + "/device/infiniband"));
  return names.empty() ? std::string() : names.front();
}

Result<HostState> HostKnobs::read(const std::string& dev,
                                  const std::optional<std::string>& rdma_device_override,
                                  KnobSelection which) {
  SysfsReader sys(sys_root());
  HostState state;
  if (which.ecn_np) {
    FABRIC_ASSIGN_OR_RETURN(state.ecn_np, read_ecn(sys, dev, kEcnNp));
  }
  if (which.ecn_rp) {
    FABRIC_ASSIGN_OR_RETURN(state.ecn_rp, read_ecn(sys, dev, kEcnRp));
  }
  bool cm = which.cm_default_tos || which.cm_default_roce_mode;
  if (!cm && !which.rdma_traffic_class) return state;

  if (rdma_device_override) {
    state.rdma_device = *rdma_device_override;
  } else {
    FABRIC_ASSIGN_OR_RETURN(state.rdma_device, rdma_device_of(dev));
  }
  if (state.rdma_device.empty()) return state;
  auto port = port_serving(sys, state.rdma_device, dev);
  if (!port.ok()) {
    state.rdma_port_problem = port.error().detail();
    return state; // the rdma.* knobs are not available: we cannot tell whose they would be
  }
  state.rdma_port = *port;

  if (cm) {
    CmFolder folder;
    FABRIC_TRY(folder.open(sys_root(), state.rdma_device));
    if (folder.available()) {
      SysfsReader any("/");
      if (which.cm_default_tos) {
        std::string file = folder.port_file(*port, "default_roce_tos");
        FABRIC_ASSIGN_OR_RETURN(auto text, any.read_optional(file));
        if (text) {
          FABRIC_ASSIGN_OR_RETURN(state.cm_default_tos, parse_tos(*text, file));
        }
      }
      if (which.cm_default_roce_mode) {
        FABRIC_ASSIGN_OR_RETURN(state.cm_default_roce_mode,
                                any.read_optional(folder.port_file(*port, "default_roce_mode")));
      }
    }
  }
  if (which.rdma_traffic_class) {
    std::string file = traffic_class_file(state.rdma_device, *port);
    FABRIC_ASSIGN_OR_RETURN(auto text, sys.read_optional(file));
    if (text) {
      FABRIC_ASSIGN_OR_RETURN(state.rdma_traffic_class, parse_traffic_class(*text, sys.path(file)));
    }
  }
  return state;
}

Result<KnobReport> HostKnobs::apply(const std::string& dev,
                                    const std::optional<std::string>& rdma_device_override,
                                    const HostState& wanted) {
  FABRIC_ASSIGN_OR_RETURN(HostState current,
                          read(dev, rdma_device_override, KnobSelection::of(wanted)));
  SysfsReader sys(sys_root());
  KnobReport report;

  // One knob: compare, write when it differs, and record what happened.
  auto settle = [&](std::string_view attribute, const auto& have, const auto& want, auto render,
                    auto write) {
    if (!want) return;
    KnobResult r{std::string(attribute), KnobOutcome::kUnchanged, {}};
    if (!have) {
      r.outcome = KnobOutcome::kNotAvailable;
      r.detail = knob_unavailable_reason(attribute, dev, current);
    } else if (*have == *want) {
      r.detail = render(*have);
    } else if (Result<void> w = write(*have, *want); w.ok()) {
      r.outcome = KnobOutcome::kApplied;
      r.detail = render(*have) + " -> " + render(*want);
    } else {
      r.outcome = KnobOutcome::kFailed;
      r.detail = w.error().message();
    }
    report.knobs.push_back(std::move(r));
  };
  auto bits = [](uint8_t mask) { return format::prio_bits(mask); };
  auto number = [](uint8_t v) { return std::to_string(v); };
  auto text = [](const std::string& s) { return s; };

  settle(kEcnNp, current.ecn_np, wanted.ecn_np, bits,
         [&](uint8_t from, uint8_t to) { return write_ecn(sys, dev, kEcnNp, from, to); });
  settle(kEcnRp, current.ecn_rp, wanted.ecn_rp, bits,
         [&](uint8_t from, uint8_t to) { return write_ecn(sys, dev, kEcnRp, from, to); });

  // Both RDMA-CM knobs go through one configfs folder, opened only if one needs a write.
  CmFolder folder;
  auto cm_write = [&](const char* name, const std::string& value) -> Result<void> {
    if (!folder.available()) FABRIC_TRY(folder.open(sys_root(), current.rdma_device));
    if (!folder.available()) {
      return Error(ErrorCode::kNotFound, "writing RDMA-CM " + std::string(name),
                   "the configfs folder for " + current.rdma_device + " went away");
    }
    return write_file(folder.port_file(current.rdma_port.value_or(0), name), value);
  };
  settle(kCmTos, current.cm_default_tos, wanted.cm_default_tos, number,
         [&](uint8_t, uint8_t to) { return cm_write("default_roce_tos", std::to_string(to)); });
  settle(
      kCmMode, current.cm_default_roce_mode, wanted.cm_default_roce_mode, text,
      [&](const std::string&, const std::string& to) { return cm_write("default_roce_mode", to); });
  settle(kRdmaTrafficClass, current.rdma_traffic_class, wanted.rdma_traffic_class, number,
         [&](uint8_t, uint8_t to) {
           return write_file(
               sys.path(traffic_class_file(current.rdma_device, current.rdma_port.value_or(0))),
               "tclass=" + std::to_string(to));
         });
  return report;
}

} // namespace fabric::pfc
