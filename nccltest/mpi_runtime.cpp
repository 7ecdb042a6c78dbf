#include "nccltest/mpi_runtime.h"

#include <mpi.h>
#include <unistd.h>

#include <vector>

#include "nccltest/mpi_support.h"

namespace fabric::nccltest::mpi {
namespace {

bool g_initialized = false;

class MpiGroup final : public Group {
public:
  explicit MpiGroup(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiGroup() override {
    if (g_initialized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<std::vector<std::string>> allgather(std::string_view mine) override {
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    FABRIC_TRY(check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_),
                     "MPI_Allgather"));
    std::vector<int> offsets(lengths.size());
    long total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    FABRIC_TRY(check(MPI_Allgatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                    offsets.data(), MPI_BYTE, comm_),
                     "MPI_Allgatherv"));
    std::vector<std::string> out;
    out.reserve(lengths.size());
    for (std::size_t r = 0; r < lengths.size(); ++r)
      out.push_back(all.substr(offsets[r], lengths[r]));
    return out;
  }

  Result<std::string> broadcast(std::string_view mine) override {
    int length = rank_ == 0 ? static_cast<int>(mine.size()) : 0;
    FABRIC_TRY(check(MPI_Bcast(&length, 1, MPI_INT, 0, comm_), "MPI_Bcast"));
    std::string data =
        rank_ == 0 ? std::string(mine) : std::string(static_cast<std::size_t>(length), '\0');
    FABRIC_TRY(check(MPI_Bcast(data.data(), length, MPI_BYTE, 0, comm_), "MPI_Bcast"));
    return data;
  }

  [[noreturn]] void abort(int exit_code, const std::string&) override { abort_world(exit_code); }

private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

} // namespace

bool built() {
  return true;
}

Result<void> init(int* argc, char*** argv) {
  if (g_initialized) return Ok();
  // MPI_Init, as nccl-tests' main calls it, not MPI_Init_thread(MPI_THREAD_FUNNELED): in Open
  // MPI 4.1 the latter made every MPI_Allreduce of 2 ranks over shared memory slower, by
  // 0.1 us at 64 B and 0.3 to 0.6 us at 2 KiB (a bare loop, 50,000 calls, either way), a gap
  // fabric-nccltest's small sizes showed against the same loop. Every MPI call here is the
  // main thread's (the watchdog orders an abort and the main thread carries it out); the
  // other threads, the watchdog's and NCCL's and CUDA's own, never call MPI, as in
  // nccl-tests.
  int rc = MPI_Init(argc, argv);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init");
  g_initialized = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return Ok();
}

bool initialized() {
  return g_initialized;
}

void finalize() {
  if (!g_initialized) return;
  g_initialized = false;
  MPI_Finalize();
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(length));
  auto end = version.find_first_of(",\n");
  return end == std::string::npos ? version : version.substr(0, end);
}

Result<std::unique_ptr<Group>> world_group() {
  MPI_Comm comm;
  FABRIC_TRY(check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup"));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<Group>(std::make_unique<MpiGroup>(comm));
}

[[noreturn]] void abort_world(int exit_code) {
  if (g_initialized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  ::_exit(exit_code);
}

} // namespace fabric::nccltest::mpi
