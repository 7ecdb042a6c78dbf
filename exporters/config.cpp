#include "exporters/config.h"

#include <algorithm>
#include <bit>
#include <set>

#include "common/atomic_file.h"
#include "common/strings.h"
#include "common/units.h"
#include "common/yaml_fields.h"

namespace fabric::exporters {
namespace {

using namespace yaml;

constexpr Range kThreads{"thread count", 2, 256};
constexpr Range kConnections{"connection count", 1, 65536};
constexpr Range kSeries{"series budget", 1, 10000000};
constexpr Range kFiles{"file count", 1, 100000};
constexpr Range kPods{"pod count", 1, 100000};
constexpr Range kMask{"mark mask", 1, 0xffffffff, true};
constexpr std::size_t kMaxClassName = 32;

Result<std::chrono::nanoseconds> read_duration(const Field& f) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, read_text(f));
  auto d = units::parse_duration(text, f.path);
  if (!d.ok()) return invalid(f, d.error().detail());
  if (d->count() <= 0) return invalid(f, "must be longer than 0");
  return *d;
}

template <typename D>
Result<void> read_duration_into(const Section& s, std::string_view key, D& out) {
  if (const Field* f = get(s, key)) {
    FABRIC_ASSIGN_OR_RETURN(auto d, read_duration(*f));
    out = std::chrono::duration_cast<D>(d);
    if (out.count() == 0) return invalid(*f, "is shorter than the unit it is kept in");
  }
  return Ok();
}

Result<void> read_bool_into(const Section& s, std::string_view key, bool& out) {
  if (const Field* f = get(s, key)) {
    FABRIC_ASSIGN_OR_RETURN(out, read_bool(*f));
  }
  return Ok();
}

template <typename T>
Result<void> read_number_into(const Section& s, std::string_view key, const Range& range, T& out) {
  if (const Field* f = get(s, key)) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t v, read_number(*f, range));
    out = static_cast<T>(v);
  }
  return Ok();
}

Result<void> read_path_into(const Section& s, std::string_view key, std::string& out) {
  if (const Field* f = get(s, key)) {
    FABRIC_ASSIGN_OR_RETURN(out, read_text(*f));
    if (!out.empty() && out.front() != '/') return invalid(*f, "must be an absolute path");
  }
  return Ok();
}

Result<std::vector<std::string>> read_names(const Field& f, const std::string& what,
                                            std::size_t max) {
  if (!f.node.IsSequence()) return invalid(f, "must be a list of " + what + "s");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < f.node.size(); ++i) {
    Field item = list_item(f, i);
    FABRIC_ASSIGN_OR_RETURN(std::string name, read_device_name(item, what, max));
    if (std::find(out.begin(), out.end(), name) != out.end())
      return invalid(item, what + " " + name + " is listed twice");
    out.push_back(std::move(name));
  }
  return out;
}

// enabled, timeout, max_series: what every collector section has.
const std::vector<std::string_view> kCommonKeys = {"enabled", "timeout", "max_series"};

std::vector<std::string_view> keys(std::vector<std::string_view> own) {
  own.insert(own.end(), kCommonKeys.begin(), kCommonKeys.end());
  return own;
}

Result<Section> open_collector(const Field& f, const std::vector<std::string_view>& own,
                               CollectorConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, keys(own)));
  FABRIC_TRY(read_bool_into(s, "enabled", out.enabled));
  FABRIC_TRY(read_duration_into(s, "timeout", out.timeout));
  FABRIC_TRY(read_number_into(s, "max_series", kSeries, out.max_series));
  return s;
}

Result<void> parse_http(const Field& f, HttpOptions& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s,
                          open_section(f, {"listen", "threads", "request_timeout",
                                           "max_connections", "max_connections_per_address"}));
  if (const Field* listen = get(s, "listen")) {
    FABRIC_ASSIGN_OR_RETURN(out.listen, read_text(*listen));
    auto spec = parse_listen_address(out.listen);
    if (!spec.ok()) return invalid(*listen, spec.error().detail());
  }
  FABRIC_TRY(read_number_into(s, "threads", kThreads, out.threads));
  FABRIC_TRY(read_number_into(s, "max_connections", kConnections, out.max_connections));
  FABRIC_TRY(read_number_into(s, "max_connections_per_address", kConnections,
                              out.max_connections_per_address));
  return read_duration_into(s, "request_timeout", out.request_timeout);
}

Result<void> parse_rdma(const Field& f, RdmaConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_collector(f, {"devices"}, out));
  if (const Field* devices = get(s, "devices")) {
    FABRIC_ASSIGN_OR_RETURN(out.devices, read_names(*devices, "RDMA device name", 63));
  }
  return Ok();
}

Result<void> parse_netdev_collector(const Field& f, NetdevCollectorConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_collector(f, {"netdevs"}, out));
  if (const Field* netdevs = get(s, "netdevs")) {
    FABRIC_ASSIGN_OR_RETURN(out.netdevs, read_names(*netdevs, "netdev name", 15));
  }
  return Ok();
}

Result<void> parse_textfile(const Field& f, TextfileConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(
      Section s, open_collector(f, {"directory", "max_age", "max_file_size", "max_files"}, out));
  FABRIC_TRY(read_path_into(s, "directory", out.directory));
  FABRIC_TRY(read_duration_into(s, "max_age", out.max_age));
  if (const Field* size = get(s, "max_file_size")) {
    FABRIC_ASSIGN_OR_RETURN(std::string text, read_text(*size));
    auto bytes = units::parse_size(text, size->path);
    if (!bytes.ok()) return invalid(*size, bytes.error().detail());
    if (*bytes == 0 || *bytes > (uint64_t{1} << 30)) return invalid(*size, "must be 1 byte to 1G");
    out.max_file_size = *bytes;
  }
  return read_number_into(s, "max_files", kFiles, out.max_files);
}

Result<void> parse_nccl(const Field& f, NcclConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(
      Section s,
      open_collector(f, {"directory", "proc_root", "cni_state_dir", "pod_log_dir", "retain_exited"},
                     out));
  FABRIC_TRY(read_path_into(s, "directory", out.directory));
  FABRIC_TRY(read_path_into(s, "proc_root", out.proc_root));
  FABRIC_TRY(read_path_into(s, "cni_state_dir", out.cni_state_dir));
  FABRIC_TRY(read_path_into(s, "pod_log_dir", out.pod_log_dir));
  return read_duration_into(s, "retain_exited", out.retain_exited);
}

bool valid_class_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxClassName) return false;
  if (!(std::islower(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

Result<TrafficClass> parse_class(const Field& f) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"name", "networks"}));
  TrafficClass out;
  const Field* name = get(s, "name");
  if (name == nullptr) return invalid(f, "a class needs a name");
  FABRIC_ASSIGN_OR_RETURN(out.name, read_text(*name));
  if (!valid_class_name(out.name)) {
    return invalid(*name, "class name '" + out.name + "' must be 1-" +
                              std::to_string(kMaxClassName) +
                              " characters of a-z, 0-9 and _, starting with a letter or _");
  }
  if (out.name == "external") {
    return invalid(*name, "'external' is the class of every address no class names; it "
                          "cannot be configured");
  }
  const Field* networks = get(s, "networks");
  if (networks == nullptr || !networks->node.IsSequence() || networks->node.size() == 0)
    return invalid(networks ? *networks : f, "a class needs a list of networks (CIDRs)");
  for (std::size_t i = 0; i < networks->node.size(); ++i) {
    Field item = list_item(*networks, i);
    FABRIC_ASSIGN_OR_RETURN(std::string text, read_text(item));
    auto cidr = parse_network(text);
    if (!cidr.ok()) return invalid(item, cidr.error().detail());
    out.networks.push_back(*cidr);
  }
  return out;
}

Result<void> parse_accounting(const Field& f, AccountingConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_collector(f,
                                                    {"backend", "mark_mask", "check_mark_conflicts",
                                                     "reconcile_interval", "cni_state_dir",
                                                     "pod_records_dir", "classes", "max_pods"},
                                                    out));
  if (const Field* backend = get(s, "backend")) {
    FABRIC_ASSIGN_OR_RETURN(std::string word, read_text(*backend));
    if (word == "auto") {
      out.backend = Backend::kAuto;
    } else if (word == "legacy") {
      out.backend = Backend::kLegacy;
    } else if (word == "nft") {
      out.backend = Backend::kNft;
    } else {
      return invalid(*backend, "must be auto, legacy or nft, not '" + word + "'");
    }
  }
  FABRIC_TRY(read_number_into(s, "mark_mask", kMask, out.mark_mask));
  FABRIC_TRY(read_bool_into(s, "check_mark_conflicts", out.check_mark_conflicts));
  FABRIC_TRY(read_duration_into(s, "reconcile_interval", out.reconcile_interval));
  FABRIC_TRY(read_path_into(s, "cni_state_dir", out.cni_state_dir));
  FABRIC_TRY(read_path_into(s, "pod_records_dir", out.pod_records_dir));
  FABRIC_TRY(read_number_into(s, "max_pods", kPods, out.max_pods));
  if (const Field* classes = get(s, "classes")) {
    if (!classes->node.IsSequence()) return invalid(*classes, "must be a list of classes");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < classes->node.size(); ++i) {
      Field item = list_item(*classes, i);
      FABRIC_ASSIGN_OR_RETURN(TrafficClass c, parse_class(item));
      if (!seen.insert(c.name).second) return invalid(item, "class " + c.name + " is listed twice");
      out.classes.push_back(std::move(c));
    }
  }
  // Class k is marked with value k in the mask's field; 0 is "external".
  const uint64_t values = uint64_t{1} << std::popcount(out.mark_mask);
  if (out.classes.size() + 1 > values) {
    const Field* where = get(s, "classes") ? get(s, "classes") : get(s, "mark_mask");
    return invalid(*where, std::to_string(out.classes.size()) + " classes and external need " +
                               std::to_string(out.classes.size() + 1) +
                               " mark values; the mark mask has " +
                               std::to_string(std::popcount(out.mark_mask)) + " bit(s), " +
                               std::to_string(values) + " values");
  }
  if (out.enabled && out.classes.empty() && get(s, "classes") != nullptr)
    return invalid(*get(s, "classes"), "is empty; name at least one class");
  return Ok();
}

// Every section is parsed even after one failed, so that a file with three mistakes is
// fixed in one round: the errors come back together, one per section at most (within a
// section, the first).
Result<Config> parse_document(const YAML::Node& root) {
  Config config = default_config();
  if (root.IsNull()) return config; // an empty file: the defaults
  Field top{{"config", root.Mark(), "config"}, root};
  if (!root.IsMap())
    return invalid(top, "must be a map of sections (http, collectors), not " + describe(root));
  top.path.clear();
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(top, {"http", "sysfs_root", "collectors"}));
  std::vector<Error> errors;
  auto note = [&errors](Result<void> done) {
    if (!done.ok()) errors.push_back(std::move(done).error());
  };
  if (const Field* http = get(s, "http")) note(parse_http(*http, config.http));
  note(read_path_into(s, "sysfs_root", config.sysfs_root));
  if (const Field* collectors = get(s, "collectors")) {
    auto c = open_section(*collectors, {"rdma", "pfc", "dcb", "textfile", "nccl", "accounting"});
    if (!c.ok()) {
      errors.push_back(std::move(c).error());
      c = Section();
    }
    if (const Field* f = get(*c, "rdma")) note(parse_rdma(*f, config.rdma));
    if (const Field* f = get(*c, "pfc")) note(parse_netdev_collector(*f, config.pfc));
    if (const Field* f = get(*c, "dcb")) note(parse_netdev_collector(*f, config.dcb));
    // A section that is there means "on" unless it says otherwise, and then needs what it
    // reads from.
    auto switched = [&](const char* key, bool& enabled, auto read_section, auto lacking,
                        const char* lacking_what) {
      const Field* f = get(*c, key);
      if (f == nullptr) return;
      enabled = true;
      Result<void> parsed = read_section(*f);
      if (parsed.ok() && enabled && lacking()) parsed = invalid(*f, lacking_what);
      note(std::move(parsed));
    };
    switched(
        "textfile", config.textfile.enabled,
        [&](const Field& f) { return parse_textfile(f, config.textfile); },
        [&] { return config.textfile.directory.empty(); },
        "textfile needs a directory (or enabled: false)");
    switched(
        "nccl", config.nccl.enabled, [&](const Field& f) { return parse_nccl(f, config.nccl); },
        [&] { return config.nccl.directory.empty(); },
        "nccl needs a directory (or enabled: false)");
    switched(
        "accounting", config.accounting.enabled,
        [&](const Field& f) { return parse_accounting(f, config.accounting); },
        [&] { return config.accounting.classes.empty(); },
        "accounting needs classes (or enabled: false)");
  }
  if (errors.empty()) return config;
  if (errors.size() == 1) return std::move(errors.front());
  std::vector<std::string> messages;
  for (const auto& e : errors)
    messages.push_back(e.message());
  return Error(ErrorCode::kInvalidConfig, "",
               std::to_string(errors.size()) + " errors:\n  " + join(messages, "\n  "));
}

} // namespace

Config default_config() {
  Config config;
  config.textfile.enabled = false;
  config.nccl.enabled = false;
  config.accounting.enabled = false;
  return config;
}

Result<Config> parse_config(const std::string& text, const std::string& source_name) {
  FABRIC_ASSIGN_OR_RETURN(std::vector<YAML::Node> documents,
                          yaml::parse_documents(text, source_name));
  if (documents.size() > 1) {
    return yaml::invalid({"config", documents[1].Mark(), "config"},
                         "has a second YAML document; a configuration is one document")
        .with_context(source_name);
  }
  auto config = parse_document(documents.empty() ? YAML::Node() : documents[0]);
  if (!config.ok() && !source_name.empty()) return std::move(config).context(source_name);
  return config;
}

Result<Config> load_config(const std::string& path) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, read_file(path));
  if (text.size() > (1u << 20)) {
    return Error(ErrorCode::kInvalidConfig, "reading " + path,
                 "larger than 1 MiB; a configuration is a few lines");
  }
  return parse_config(text, path);
}

std::vector<std::string> class_names(const AccountingConfig& config) {
  std::vector<std::string> names{"external"};
  for (const auto& c : config.classes)
    names.push_back(c.name);
  return names;
}

} // namespace fabric::exporters
