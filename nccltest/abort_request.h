// An order to end the run, posted from any thread and carried out by the one thread that
// owns the communicator. NCCL's communicator is not thread-safe (ncclCommAbort from one
// thread while another still calls into the communicator uses freed memory), and MPI is
// initialised for one thread's calls (MPI_Init, as nccl-tests): only the main thread may
// call MPI (MPI_Abort included). So the
// watchdog's monitor and the control channel's I/O thread only post here; the main thread
// polls requested() where it waits (the nccl engine's stream wait, the stall fault), aborts
// its communicator itself, and ends the job from the main thread. A poster whose order is
// not taken over within a grace period (the owner blocked where it cannot poll, such as
// inside an MPI collective) ends the process with _exit, which is legal from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace fabric::nccltest {

class AbortRequest {
public:
  // Posts the order; the first one wins (returns false when one was already posted).
  bool post(int exit_code, const std::string& reason);
  // Cheap enough for a polling loop.
  bool requested() const noexcept { return requested_.load(std::memory_order_acquire); }
  int exit_code() const;
  std::string reason() const;

  // The owner: it has stopped using its communicator and is ending the process.
  void take_over();
  // A poster: waits at most `grace` for the owner to take over; true when it did.
  bool wait_for_owner(std::chrono::milliseconds grace);

private:
  std::atomic<bool> requested_{false};
  mutable std::mutex mutex_;
  std::condition_variable taken_;
  bool taken_over_ = false;
  int exit_code_ = 0;
  std::string reason_;
};

} // namespace fabric::nccltest
