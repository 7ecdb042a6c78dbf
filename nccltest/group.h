// The ranks of a run as the control plane sees them: small exchanges between ranks (the
// NCCL id, rank descriptions, timings, check results), never collective data. Under mpirun
// they go over MPI; under the rendezvous over its TCP connections to rank 0; a single
// process exchanges with itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::nccltest {

class Group {
public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's bytes, in rank order, on every rank.
  virtual Result<std::vector<std::string>> allgather(std::string_view mine) = 0;
  // Rank 0's bytes on every rank (`mine` is ignored elsewhere).
  virtual Result<std::string> broadcast(std::string_view mine) = 0;
  // Ends the whole job, every rank, with `exit_code`; `reason` goes to the other ranks'
  // logs where the transport can carry it. Does not return.
  [[noreturn]] virtual void abort(int exit_code, const std::string& reason) = 0;
};

// One process alone.
std::unique_ptr<Group> make_single_group();

// Numbers through a Group: each rank's value, in rank order.
Result<std::vector<double>> allgather_doubles(Group& group, const std::vector<double>& mine);

} // namespace fabric::nccltest
