#include "exporters/nccl_profiler/process_locator.h"

#include <cctype>

#include "exporters/nccl_profiler/proc_stat.h"

namespace fabric::nccl_profiler {
namespace {

// Bounds what a scan holds for processes whose namespace link cannot be read: a node runs
// far fewer processes than this.
constexpr std::size_t kMaxUnverified = 1 << 20;

bool is_pid(const std::string& name) {
  if (name.empty() || name.size() > 10) return false;
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

} // namespace

ProcessLocator::ProcessLocator(std::string proc_root) : proc_(std::move(proc_root)) {}

void ProcessLocator::begin_read() {
  scanned_ = false;
  by_namespace_.clear();
  unverified_.clear();
  std::erase_if(known_, [](const auto& entry) { return !entry.second.used; });
  for (auto& entry : known_)
    entry.second.used = false;
  if (!own_namespace_) own_namespace_ = pid_namespace("self");
}

std::optional<uint64_t> ProcessLocator::start_ticks(int64_t pid) const {
  auto stat = proc_.read_optional(std::to_string(pid) + "/stat");
  if (!stat.ok() || !*stat) return std::nullopt;
  return parse_stat_start_ticks(**stat);
}

std::optional<uint32_t> ProcessLocator::file_owner(int64_t pid) const {
  auto status = proc_.read_optional(std::to_string(pid) + "/status");
  if (!status.ok() || !*status) return std::nullopt;
  return parse_status_fsuid(**status);
}

std::optional<uint64_t> ProcessLocator::pid_namespace(const std::string& pid) const {
  auto link = proc_.link_name(pid + "/ns/pid");
  if (!link.ok()) return std::nullopt;
  return parse_pid_ns_link(*link);
}

void ProcessLocator::scan() {
  scanned_ = true;
  auto names = proc_.list("");
  if (!names.ok()) return;
  for (const auto& name : *names) {
    if (!is_pid(name)) continue;
    auto status = proc_.read_optional(name + "/status");
    if (!status.ok() || !*status) continue; // exited meanwhile
    auto inner = parse_status_nspid(**status);
    if (!inner) continue;
    // /proc/PID/ns/pid needs ptrace access to the process (CAP_SYS_PTRACE for another
    // container's); status, stat and cgroup do not. Without the link the process is
    // matched by its pid in its namespace and its start time (below).
    if (auto ns = pid_namespace(name)) {
      by_namespace_[{*ns, *inner}] = std::stoll(name);
    } else if (unverified_.size() < kMaxUnverified) {
      unverified_.emplace(*inner, std::stoll(name));
    }
  }
}

Located ProcessLocator::locate(const ProcessClaim& claim) {
  if (claim.pid <= 0) return {};
  bool same_namespace = claim.pid_ns == 0 ? false : own_namespace_ == claim.pid_ns;
  if (same_namespace) {
    if (start_ticks(claim.pid) == claim.start_ticks) return {Presence::kAlive, claim.pid};
    return {Presence::kExited, 0};
  }
  // Without the namespace, or from a reader that does not see the whole machine, a pid
  // that is not found proves nothing.
  bool sees_all = own_namespace_ == kInitialPidNamespace;
  if (claim.pid_ns == 0 || !sees_all) return {};
  auto key = std::make_tuple(claim.pid_ns, claim.pid, claim.start_ticks);
  if (auto it = known_.find(key); it != known_.end()) {
    if (start_ticks(it->second.pid) == claim.start_ticks) {
      it->second.used = true;
      return {Presence::kAlive, it->second.pid};
    }
    known_.erase(it);
  }
  if (!scanned_) scan();
  int64_t found = 0;
  if (auto it = by_namespace_.find({claim.pid_ns, claim.pid}); it != by_namespace_.end()) {
    if (start_ticks(it->second) == claim.start_ticks) found = it->second;
  } else {
    // Processes whose namespace this reader may not read: the one with this inner pid and
    // start time, if exactly one has both.
    auto [first, last] = unverified_.equal_range(claim.pid);
    int matches = 0;
    for (auto candidate = first; candidate != last; ++candidate) {
      if (start_ticks(candidate->second) != claim.start_ticks) continue;
      found = candidate->second;
      ++matches;
    }
    // Two candidates: the file cannot be bound to either, as if its process were gone.
    if (matches > 1) return {Presence::kExited, 0};
  }
  if (found == 0) return {Presence::kExited, 0};
  known_[key] = {found, true};
  return {Presence::kAlive, found};
}

} // namespace fabric::nccl_profiler
