// fabric-exporter's configuration: a YAML file (--config), every key optional.
// exporters/README.md ("Configuration") is the reference; errors name the key and its line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "exporters/cidr.h"
#include "exporters/http_server.h"

namespace fabric::exporters {

struct CollectorConfig {
  bool enabled = true;
  std::chrono::milliseconds timeout{5000};
  std::size_t max_series = 10000;
  bool operator==(const CollectorConfig&) const = default;
};

struct RdmaConfig : CollectorConfig {
  std::vector<std::string> devices; // empty: all
};

struct NetdevCollectorConfig : CollectorConfig {
  std::vector<std::string> netdevs; // empty: the netdevs with a device (physical functions)
};

struct TextfileConfig : CollectorConfig {
  std::string directory;            // empty: the collector is off
  std::chrono::seconds max_age{0};  // 0: served however old; else older files are dropped
  uint64_t max_file_size = 4 << 20; // bytes
  std::size_t max_files = 1000;
};

// The NCCL profiler plugin's files (exporters/nccl_profiler): where the plugin writes them
// on the node (its FABRIC_NCCL_DIR), and where the exporter finds processes and
// pods to name the series.
struct NcclConfig : CollectorConfig {
  std::string directory;           // empty: the collector is off
  std::string proc_root = "/proc"; // the host's (a DaemonSet with hostPID)
  std::string cni_state_dir = "/var/lib/cni/fabric";
  std::string pod_log_dir = "/var/log/pods";
  std::chrono::seconds retain_exited{300}; // an exited process's last values, this long
  bool operator==(const NcclConfig&) const = default;
};

struct TrafficClass {
  std::string name;
  std::vector<Cidr> networks;
  bool operator==(const TrafficClass&) const = default;
};

enum class Backend { kAuto, kLegacy, kNft };

struct AccountingConfig : CollectorConfig {
  Backend backend = Backend::kAuto;
  uint32_t mark_mask = 0x3000;
  bool check_mark_conflicts = true;
  std::chrono::seconds reconcile_interval{10};
  std::string cni_state_dir = "/var/lib/cni/fabric";
  std::string pod_records_dir;       // empty: none
  std::vector<TrafficClass> classes; // in priority order; "external" is everything else
  std::size_t max_pods = 2500;
  bool operator==(const AccountingConfig&) const = default;
};

struct Config {
  HttpOptions http;
  std::string sysfs_root = "/sys";
  RdmaConfig rdma;
  NetdevCollectorConfig pfc;
  NetdevCollectorConfig dcb;
  TextfileConfig textfile;
  NcclConfig nccl;
  AccountingConfig accounting;
};

// The configuration without a file: RDMA, PFC and DCB on, textfiles, NCCL and accounting off.
Config default_config();

Result<Config> parse_config(const std::string& text, const std::string& source_name);
Result<Config> load_config(const std::string& path);

// The traffic class names in mark order: index 0 is "external" (mark value 0), then the
// configured classes, whose mark values are 1, 2, ...
std::vector<std::string> class_names(const AccountingConfig& config);

} // namespace fabric::exporters
