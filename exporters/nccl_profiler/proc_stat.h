// The fields of procfs that identify a process beyond its pid, which the kernel reuses:
// its start time and its pid namespace. The plugin writes its own into its file, and the
// reader matches them against the processes it sees, possibly from another pid namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fabric::nccl_profiler {

// Field 22 of /proc/PID/stat, "starttime": clock ticks after boot. The command name in
// field 2 may hold spaces and parentheses, so fields are counted after its last ')'.
std::optional<uint64_t> parse_stat_start_ticks(std::string_view stat);

// The inode in a /proc/PID/ns/pid link target, "pid:[4026531836]".
std::optional<uint64_t> parse_pid_ns_link(std::string_view target);

// The last pid of the "NSpid:" line of /proc/PID/status: the process's pid in its own
// (innermost) pid namespace.
std::optional<int64_t> parse_status_nspid(std::string_view status);

// The filesystem uid of /proc/PID/status's "Uid:" line (real, effective, saved, fs): the
// owner of the files the process creates, as the reader's user namespace sees it.
std::optional<uint32_t> parse_status_fsuid(std::string_view status);

} // namespace fabric::nccl_profiler
