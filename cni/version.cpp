#include "cni/version.h"

#include <charconv>

namespace fabric::cni {
namespace {

std::string joined_supported() {
  std::string out;
  for (const auto& v : supported_versions()) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

} // namespace

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> kVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return kVersions;
}

bool is_supported(std::string_view version) {
  for (const auto& v : supported_versions()) {
    if (v == version) return true;
  }
  return false;
}

Result<void> check_supported(std::string_view version) {
  if (is_supported(version)) return Ok();
  return Error(ErrorCode::kIncompatibleVersion, "cniVersion",
               "'" + std::string(version) + "' is not supported (fabric-cni supports " +
                   joined_supported() + ")");
}

Result<std::array<int, 3>> parse_version(std::string_view version) {
  if (version.empty()) return std::array<int, 3>{0, 1, 0};
  std::array<int, 3> parts{0, 0, 0};
  std::size_t index = 0;
  std::string_view rest = version;
  while (true) {
    std::size_t dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    // Decimal digits only: libcni's Atoi would also take a sign, no spec version has one.
    bool digits = !part.empty() && part.size() <= 9 &&
                  part.find_first_not_of("0123456789") == std::string_view::npos;
    if (index >= parts.size() || !digits) {
      return Error(ErrorCode::kIncompatibleVersion, "cniVersion",
                   "'" + std::string(version) + "' is not a version (expected MAJOR.MINOR.PATCH)");
    }
    std::from_chars(part.data(), part.data() + part.size(), parts[index]);
    ++index;
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  return parts;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto pa = parse_version(a);
  auto pb = parse_version(b);
  if (!pa.ok() || !pb.ok()) return static_cast<int>(pa.ok()) - static_cast<int>(pb.ok());
  for (std::size_t i = 0; i < 3; ++i) {
    if ((*pa)[i] != (*pb)[i]) return (*pa)[i] < (*pb)[i] ? -1 : 1;
  }
  return 0;
}

std::string_view first_version_with(Command command) {
  switch (command) {
  case Command::kCheck: return "0.4.0";
  case Command::kStatus:
  case Command::kGc: return "1.1.0";
  case Command::kAdd:
  case Command::kDel: return "0.1.0";
  case Command::kVersion: return "0.2.0";
  }
  return "0.1.0";
}

Result<void> check_command_allowed(Command command, std::string_view version) {
  std::string_view first = first_version_with(command);
  if (compare_versions(version, first) >= 0) return Ok();
  return Error(ErrorCode::kIncompatibleVersion, "cniVersion",
               "'" + std::string(version) + "' does not have " +
                   std::string(command_name(command)) + " (it came with " + std::string(first) +
                   ")");
}

bool result_has_ip_version(std::string_view version) {
  return compare_versions(version, "1.0.0") < 0;
}

bool result_has_1_1_fields(std::string_view version) {
  return compare_versions(version, "1.1.0") >= 0;
}

} // namespace fabric::cni
