#include "exporters/nccl_profiler/process_locator.h"

#include <cctype>

#include "exporters/nccl_profiler/proc_stat.h"

namespace fabric::nccl_profiler {
namespace {

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
    auto ns = pid_namespace(name);
    if (!ns) continue; // exited meanwhile, or a kernel thread
    auto status = proc_.read_optional(name + "/status");
    if (!status.ok() || !*status) continue;
    if (auto inner = parse_status_nspid(**status)) {
      by_namespace_[{*ns, *inner}] = std::stoll(name);
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
  auto it = by_namespace_.find({claim.pid_ns, claim.pid});
  if (it == by_namespace_.end() || start_ticks(it->second) != claim.start_ticks) {
    return {Presence::kExited, 0};
  }
  known_[key] = {it->second, true};
  return {Presence::kAlive, it->second};
}

} // namespace fabric::nccl_profiler
