// Error values for every fabrickit library: one Error type carried in Result<T>.
//
// An Error records where it started (the failing operation and its errno), what it means
// for the user (detail, hint) and the context callers add as it travels up. Its code maps,
// through one table, to the CLI's exit status and to the CNI spec's error codes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabric {

enum class ErrorCode {
  kInvalidArgument,     // bad command-line argument or API input
  kInvalidConfig,       // well-formed configuration with a bad value
  kDecode,              // malformed JSON or other input that cannot be parsed
  kIncompatibleVersion, // protocol or spec version not supported
  kPeerIncompatible,    // the peer at the other end speaks another protocol version
  kInvalidEnvironment,  // missing or malformed environment variable
  kNotFound,            // a named device, file or object does not exist
  kAlreadyExists,       // a name or object is taken
  kPermission,          // EPERM/EACCES: needs privileges the caller lacks
  kSystem,              // a system call or kernel interface failed
  kTimeout,             // a bounded wait ran out
  kTryAgain,            // transient: the caller may retry later
  kUnsupported,         // the kernel or device does not support the request
  kNotBuilt,            // the feature was left out of this build
  kBelowThreshold,      // a check ran and its result fell below the required level
  kInternal,            // a bug: an invariant of our own code did not hold
};

// Process exit statuses shared by every fabrickit command.
enum ExitStatus : int {
  kExitOk = 0,
  kExitUsage = 1,
  kExitSystem = 2,
  kExitBelowThreshold = 3,
  kExitUnsupported = 4,
};

class Error {
public:
  Error(ErrorCode code, std::string operation, std::string detail = {});

  // An error from a failed call that set errno (or returned it): keeps the number and
  // derives the code from it (EPERM -> kPermission, ENOENT/ENODEV -> kNotFound, ...).
  static Error from_errno(int err, std::string operation, std::string detail = {});

  Error& with_hint(std::string hint) &;
  Error&& with_hint(std::string hint) &&;
  // Context is added outermost-last and printed outermost-first:
  // "reading port 1 of rxe0: ibv_query_port: Invalid argument".
  Error& with_context(std::string context) &;
  Error&& with_context(std::string context) &&;

  ErrorCode code() const { return code_; }
  int sys_errno() const { return errno_; }
  const std::string& operation() const { return operation_; }
  const std::string& detail() const { return detail_; }
  const std::string& hint() const { return hint_; }
  const std::vector<std::string>& context() const { return context_; }

  // One line: context, operation, detail and strerror(errno), without the hint.
  std::string message() const;

private:
  ErrorCode code_;
  int errno_ = 0;
  std::string operation_;
  std::string detail_;
  std::string hint_;
  std::vector<std::string> context_;
};

std::string_view error_code_name(ErrorCode code);

// The one table from error codes to outside conventions.
int exit_status_for(ErrorCode code);
// CNI spec error codes: 1 incompatible version, 4 invalid environment, 6 decode,
// 7 invalid config, 11 try again later; plugin-specific codes start at 100.
int cni_code_for(ErrorCode code);

} // namespace fabric
