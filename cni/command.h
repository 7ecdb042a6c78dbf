// The CNI operations a runtime asks for through CNI_COMMAND.
#pragma once

#include <optional>
#include <string_view>

namespace fabric::cni {

enum class Command { kAdd, kDel, kCheck, kStatus, kGc, kVersion };

// The spec's spelling: "ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION".
std::string_view command_name(Command command);

// The inverse of command_name(); the match is exact, as in libcni ("add" is unknown).
std::optional<Command> parse_command(std::string_view name);

inline constexpr Command kAllCommands[] = {Command::kAdd,    Command::kDel, Command::kCheck,
                                           Command::kStatus, Command::kGc,  Command::kVersion};

} // namespace fabric::cni
