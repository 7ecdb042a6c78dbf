#include "cni/names.h"

#include <cctype>
#include <string>

namespace fabric::cni {
namespace {

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// The spec's identifier rule: ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$
Result<void> validate_identifier(std::string_view value, std::string_view field,
                                 std::size_t max_length, ErrorCode code) {
  std::string name(field);
  if (value.empty()) return Error(code, name, "must not be empty");
  if (value.size() > max_length) {
    return Error(code, name,
                 "is " + std::to_string(value.size()) + " characters long; the limit is " +
                     std::to_string(max_length));
  }
  if (!is_alnum(value.front())) {
    return Error(code, name, "must start with a letter or digit");
  }
  for (char c : value) {
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-') {
      return Error(code, name,
                   "may only contain letters, digits, '_', '.' and '-' (found '" +
                       std::string(1, c) + "')");
    }
  }
  return Ok();
}

} // namespace

Result<void> validate_container_id(std::string_view id, std::string_view field) {
  return validate_identifier(id, field, kMaxContainerIdLength, ErrorCode::kInvalidEnvironment);
}

Result<void> validate_network_name(std::string_view name, std::string_view field) {
  return validate_identifier(name, field, kMaxNetworkNameLength, ErrorCode::kInvalidConfig);
}

Result<void> validate_interface_name(std::string_view name, std::string_view field) {
  std::string f(field);
  if (name.empty()) return Error(ErrorCode::kInvalidEnvironment, f, "must not be empty");
  if (name.size() > kMaxInterfaceNameLength) {
    return Error(ErrorCode::kInvalidEnvironment, f,
                 "'" + std::string(name) + "' is longer than " +
                     std::to_string(kMaxInterfaceNameLength) + " bytes, the kernel's limit");
  }
  if (name == "." || name == "..") {
    return Error(ErrorCode::kInvalidEnvironment, f, "must not be '.' or '..'");
  }
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c == '\0' ||
        !std::isprint(static_cast<unsigned char>(c))) {
      return Error(ErrorCode::kInvalidEnvironment, f,
                   "'" + std::string(name) +
                       "' contains a character the kernel refuses in interface names");
    }
  }
  return Ok();
}

} // namespace fabric::cni
