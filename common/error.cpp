#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace fabric {
namespace {

ErrorCode code_for_errno(int err) {
  switch (err) {
  case EPERM:
  case EACCES: return ErrorCode::kPermission;
  case ENOENT:
  case ENODEV:
  case ENXIO:
  case ESRCH: return ErrorCode::kNotFound;
  case EEXIST:
  case EBUSY:
  case EADDRINUSE: return ErrorCode::kAlreadyExists;
  case EINVAL:
  case ERANGE: return ErrorCode::kInvalidArgument;
  case EOPNOTSUPP:
  case ENOSYS:
  case EPROTONOSUPPORT:
  case EAFNOSUPPORT: return ErrorCode::kUnsupported;
  case ETIMEDOUT: return ErrorCode::kTimeout;
  case EAGAIN:
  case EINTR: return ErrorCode::kTryAgain;
  default: return ErrorCode::kSystem;
  }
}

// strerror() is not thread-safe; the GNU strerror_r returns the message pointer.
std::string errno_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);
}

} // namespace

Error::Error(ErrorCode code, std::string operation, std::string detail)
    : code_(code), operation_(std::move(operation)), detail_(std::move(detail)) {}

Error Error::from_errno(int err, std::string operation, std::string detail) {
  Error e(code_for_errno(err), std::move(operation), std::move(detail));
  e.errno_ = err;
  return e;
}

Error& Error::with_hint(std::string hint) & {
  hint_ = std::move(hint);
  return *this;
}
Error&& Error::with_hint(std::string hint) && {
  return std::move(with_hint(std::move(hint)));
}

Error& Error::with_context(std::string context) & {
  context_.push_back(std::move(context));
  return *this;
}
Error&& Error::with_context(std::string context) && {
  return std::move(with_context(std::move(context)));
}

std::string Error::message() const {
  std::string out;
  for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
    out += *it;
    out += ": ";
  }
  out += operation_;
  if (!detail_.empty()) {
    out += operation_.empty() ? "" : ": ";
    out += detail_;
  }
  if (errno_ != 0) {
    out += ": ";
    out += errno_text(errno_);
  }
  return out;
}

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
  case ErrorCode::kInvalidArgument: return "invalid_argument";
  case ErrorCode::kInvalidConfig: return "invalid_config";
  case ErrorCode::kDecode: return "decode";
  case ErrorCode::kIncompatibleVersion: return "incompatible_version";
  case ErrorCode::kPeerIncompatible: return "peer_incompatible";
  case ErrorCode::kInvalidEnvironment: return "invalid_environment";
  case ErrorCode::kNotFound: return "not_found";
  case ErrorCode::kAlreadyExists: return "already_exists";
  case ErrorCode::kPermission: return "permission";
  case ErrorCode::kSystem: return "system";
  case ErrorCode::kTimeout: return "timeout";
  case ErrorCode::kTryAgain: return "try_again";
  case ErrorCode::kUnsupported: return "unsupported";
  case ErrorCode::kNotBuilt: return "not_built";
  case ErrorCode::kBelowThreshold: return "below_threshold";
  case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

namespace {

struct CodeMapping {
  ErrorCode code;
  int exit_status;
  int cni_code;
};

// The single table behind exit_status_for() and cni_code_for().
constexpr CodeMapping kCodeTable[] = {
    {ErrorCode::kInvalidArgument, kExitUsage, 7},
    {ErrorCode::kInvalidConfig, kExitUsage, 7},
    {ErrorCode::kDecode, kExitUsage, 6},
    {ErrorCode::kIncompatibleVersion, kExitUnsupported, 1},
    // A remote agent of another version is a failure of the network step, like a missing
    // one (exit 2), not something this build cannot do.
    {ErrorCode::kPeerIncompatible, kExitSystem, 1},
    {ErrorCode::kInvalidEnvironment, kExitUsage, 4},
    {ErrorCode::kNotFound, kExitSystem, 100},
    {ErrorCode::kAlreadyExists, kExitSystem, 101},
    {ErrorCode::kPermission, kExitSystem, 102},
    {ErrorCode::kSystem, kExitSystem, 103},
    {ErrorCode::kTimeout, kExitSystem, 104},
    {ErrorCode::kTryAgain, kExitSystem, 11},
    {ErrorCode::kUnsupported, kExitUnsupported, 105},
    {ErrorCode::kNotBuilt, kExitUnsupported, 106},
    {ErrorCode::kBelowThreshold, kExitBelowThreshold, 107},
    {ErrorCode::kInternal, kExitSystem, 999},
};

const CodeMapping& mapping_for(ErrorCode code) {
  for (const auto& m : kCodeTable) {
    if (m.code == code) return m;
  }
  return kCodeTable[std::size(kCodeTable) - 1];
}

} // namespace

int exit_status_for(ErrorCode code) {
  return mapping_for(code).exit_status;
}
int cni_code_for(ErrorCode code) {
  return mapping_for(code).cni_code;
}

} // namespace fabric
