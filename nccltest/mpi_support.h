// MPI's return convention translated once, for the files that include mpi.h.
#pragma once

#include <mpi.h>

#include <string>

#include "common/result.h"

namespace fabric::nccltest::mpi {

inline Error mpi_error(int rc, const std::string& operation) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Error(ErrorCode::kSystem, operation, std::string(text, static_cast<std::size_t>(length)));
}

inline Result<void> check(int rc, const char* operation) {
  if (rc == MPI_SUCCESS) return Ok();
  return mpi_error(rc, operation);
}

} // namespace fabric::nccltest::mpi
