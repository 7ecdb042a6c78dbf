#include "cni/command.h"

namespace fabric::cni {

std::string_view command_name(Command command) {
  switch (command) {
  case Command::kAdd: return "ADD";
  case Command::kDel: return "DEL";
  case Command::kCheck: return "CHECK";
  case Command::kStatus: return "STATUS";
  case Command::kGc: return "GC";
  case Command::kVersion: return "VERSION";
  }
  return "UNKNOWN";
}

std::optional<Command> parse_command(std::string_view name) {
  for (Command c : kAllCommands) {
    if (command_name(c) == name) return c;
  }
  return std::nullopt;
}

} // namespace fabric::cni
