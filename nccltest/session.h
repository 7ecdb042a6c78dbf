// The plumbing of a run, set up in order before anything is measured: the ranks' Group
// (MPI, the rendezvous, or one process), the backend every rank agreed on, each rank's
// description, the checks that need all of them, the watchdog (its control channel and
// monitor), and the engine. Errors that every rank meets alike are printed by rank 0 only.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "nccltest/abort_request.h"
#include "nccltest/engine.h"
#include "nccltest/fault.h"
#include "nccltest/group.h"
#include "nccltest/launch.h"
#include "nccltest/memory_report.h"
#include "nccltest/options.h"
#include "nccltest/progress.h"
#include "nccltest/rank_info.h"
#include "nccltest/rendezvous.h"

namespace fabric::nccltest {

inline constexpr const char* kProgram = "fabric-nccltest";

struct Session {
  Options options;
  Launch launch;
  FaultPlan fault;

  BackendKind backend = BackendKind::kMpi;
  std::string backend_reason;
  std::unique_ptr<Group> group;
  std::unique_ptr<ProgressBoard> board; // rank 0, with the watchdog on
  ControlPlane watchdog_plane;          // under mpirun, with the watchdog on
  ControlServer* server = nullptr;      // rank 0's end of the control channel, if any
  ControlClient* client = nullptr;      // another rank's end, if any
  TcpGroup* rendezvous = nullptr;       // `group`, when the ranks met without MPI
  Progress progress;
  std::unique_ptr<WatchdogMonitor> monitor;
  std::vector<RankFacts> ranks; // one per rank: process p's are p * per_process ...
  int nodes = 1;
  std::unique_ptr<Engine> engine;
  AbortRequest abort;        // posted by other threads, carried out by the main thread
  std::string nccl_log_dir;  // where NCCL's INFO log is captured
  std::string nccl_log_note; // why it is not, when the user set NCCL's log
  std::atomic<bool> nccl_warnings_relayed{false};
  int nccl_library = 0;
  std::string memory_note;              // "Reducing maxBytes to ..." when the sizes were cut to fit
  std::vector<std::string> setup_notes; // header lines: -g/-t/-R on this backend, buffers
  int per_process = 1; // ranks each process drives: -g x -t on the nccl backend, else 1
  // NCCL_TESTS_SPLIT(_MASK): this rank's group, whose communicator runs the collective.
  std::optional<int> split;
  std::string split_note;
  GpuMemoryUsage gpu_memory; // -M 1 (nccl backend): this process's figures so far

  ~Session();
  int rank() const { return group ? group->rank() : launch.rank; }
  int size() const { return group ? group->size() : launch.world_size; }
  // The communicator's ranks: every process's GPUs (nccl-tests' nProcs x nThreads x nGpus).
  int nranks() const { return size() * per_process; }
  std::vector<RankInfo> rank_infos() const;
};

// An error and whether every rank has it (then only rank 0 prints it).
struct SetupError {
  Error error;
  bool shared = false;
};

// Group, backend, descriptions, world checks, watchdog channel: everything up to (not
// including) the engine. `on_hang` runs on rank 0 when the watchdog fires.
Result<void> open_session(Session& s, int* argc, char*** argv,
                          std::function<void(const HangReport&)> on_hang, bool& shared_error);

// The communicator and its buffers, inside the watchdog's "setup" phase.
Result<void> open_engine(Session& s);

// Ends the whole job, from a thread other than the main one (the watchdog's monitor, the
// control channel): tells the other ranks, posts the order for the main thread (which
// aborts its communicator and ends the job), and ends the process itself if the main
// thread has not taken the order over within a grace period.
[[noreturn]] void abort_run(Session& s, int exit_code, const std::string& reason);

// NCCL's WARN lines from the captured log, to stderr, once (the capture takes them off the
// console: nccl_log.h).
void relay_nccl_warnings(Session& s);

// On the main thread, once an abort was posted: ends the job with the posted exit status
// (MPI_Abort under mpirun). No-op when none was posted.
void carry_out_abort(Session& s);

} // namespace fabric::nccltest
