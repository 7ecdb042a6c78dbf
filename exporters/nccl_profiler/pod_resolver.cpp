#include "exporters/nccl_profiler/pod_resolver.h"

#include <algorithm>

#include "libs/attachment_record/attachment_record.h"

namespace fabric::nccl_profiler {
namespace {

// Bounds on what the directories may make us hold: a node runs at most a few hundred pods.
constexpr std::size_t kMaxPods = 10000;
constexpr std::size_t kMaxNameLength = 253;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// A pod UID: a UUID (8-4-4-4-12 lowercase hex), or the 32 hex digits of a static pod's
// hash. `separator` is '-' as the API server writes it, '_' in systemd unit names.
std::optional<std::string> normalize_uid(std::string_view text, char separator) {
  if (text.size() == 32 && std::all_of(text.begin(), text.end(), is_hex)) return std::string(text);
  if (text.size() != 36) return std::nullopt;
  std::string uid(text);
  for (std::size_t i = 0; i < uid.size(); ++i) {
    bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_position) {
      if (uid[i] != separator) return std::nullopt;
      uid[i] = '-';
    } else if (!is_hex(uid[i])) {
      return std::nullopt;
    }
  }
  return uid;
}

std::optional<std::string> uid_in_component(std::string_view component) {
  // cgroupfs: "pod<uid>"
  if (component.starts_with("pod")) {
    if (auto uid = normalize_uid(component.substr(3), '-')) return uid;
  }
  // systemd: "kubepods-burstable-pod<uid>.slice", "kubepods-pod<uid>.slice"
  if (component.starts_with("kubepods") && component.ends_with(".slice")) {
    std::size_t at = component.rfind("-pod");
    if (at != std::string_view::npos) {
      std::string_view uid = component.substr(at + 4, component.size() - at - 4 - 6);
      return normalize_uid(uid, '_');
    }
  }
  return std::nullopt;
}

// Kubernetes names: DNS labels and subdomains, lowercase letters, digits, '-' and '.'.
bool is_k8s_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

} // namespace

std::optional<std::string> pod_uid_from_cgroup(std::string_view cgroup) {
  while (!cgroup.empty()) {
    std::size_t eol = cgroup.find('\n');
    std::string_view line = cgroup.substr(0, eol);
    cgroup.remove_prefix(eol == std::string_view::npos ? cgroup.size() : eol + 1);
    // "hierarchy-ID:controllers:path"; the path may itself hold ':'.
    std::size_t first = line.find(':');
    std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view path = line.substr(second + 1);
    // The innermost pod component wins: a pod does not nest in a pod, but a path might
    // carry a prefix that happens to look like one.
    std::optional<std::string> found;
    while (!path.empty()) {
      std::size_t slash = path.find('/');
      if (auto uid = uid_in_component(path.substr(0, slash))) found = uid;
      path.remove_prefix(slash == std::string_view::npos ? path.size() : slash + 1);
    }
    if (found) return found;
  }
  return std::nullopt;
}

std::optional<std::string> pod_uid_of_process(const SysfsReader& proc, int64_t pid) {
  auto cgroup = proc.read_optional(std::to_string(pid) + "/cgroup");
  if (!cgroup.ok() || !*cgroup) return std::nullopt;
  return pod_uid_from_cgroup(**cgroup);
}

PodDirectory::PodDirectory(std::string cni_state_dir, std::string pod_log_dir)
    : cni_state_dir_(std::move(cni_state_dir)), pod_log_dir_(std::move(pod_log_dir)) {}

std::optional<PodRef> PodDirectory::find(const std::string& uid) {
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end() && !refreshed_) {
    refresh();
    it = by_uid_.find(uid);
  }
  if (it == by_uid_.end()) return std::nullopt;
  return it->second;
}

void PodDirectory::refresh() {
  refreshed_ = true;
  by_uid_.clear();
  add_cni_records();
  add_pod_log_dirs();
}

void PodDirectory::add_cni_records() {
  if (cni_state_dir_.empty()) return;
  auto networks = SysfsReader(cni_state_dir_).list("networks");
  if (!networks.ok()) return;
  for (const auto& network : *networks) {
    auto found = cni::read_records(cni_state_dir_, network);
    if (!found.ok()) continue;
    for (const auto& record : found->records) {
      if (by_uid_.size() >= kMaxPods) return;
      auto uid = normalize_uid(record.pod_uid, '-');
      if (!uid || !is_k8s_name(record.pod_namespace) || !is_k8s_name(record.pod_name)) continue;
      by_uid_.try_emplace(*uid, PodRef{record.pod_namespace, record.pod_name});
    }
  }
}

void PodDirectory::add_pod_log_dirs() {
  if (pod_log_dir_.empty()) return;
  auto entries = SysfsReader(pod_log_dir_).list("");
  if (!entries.ok()) return;
  for (const auto& entry : *entries) {
    if (by_uid_.size() >= kMaxPods) return;
    // "<namespace>_<name>_<uid>": '_' is in neither a namespace nor a pod name.
    std::size_t first = entry.find('_');
    std::size_t last = entry.rfind('_');
    if (first == std::string::npos || first == last) continue;
    std::string pod_namespace = entry.substr(0, first);
    std::string pod_name = entry.substr(first + 1, last - first - 1);
    auto uid = normalize_uid(std::string_view(entry).substr(last + 1), '-');
    if (!uid || !is_k8s_name(pod_namespace) || !is_k8s_name(pod_name)) continue;
    by_uid_.try_emplace(*uid, PodRef{pod_namespace, pod_name});
  }
}

} // namespace fabric::nccl_profiler
