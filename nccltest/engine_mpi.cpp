// The mpi engine: Open MPI's collectives on host memory. The timed loop is the bare loop a
// person would write (barrier, MPI_Wtime, n calls, MPI_Wtime) with the call chosen once,
// before the loop.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "nccltest/mpi_runtime.h"
#include "nccltest/mpi_support.h"

namespace fabric::nccltest::mpi {
namespace {

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
  case DataType::kFloat: return MPI_FLOAT;
  case DataType::kDouble: return MPI_DOUBLE;
  case DataType::kInt32: return MPI_INT32_T;
  case DataType::kInt64: return MPI_INT64_T;
  case DataType::kInt8: return MPI_INT8_T;
  case DataType::kUint8: return MPI_UINT8_T;
  case DataType::kUint32: return MPI_UINT32_T;
  case DataType::kUint64: return MPI_UINT64_T;
  default: return MPI_DATATYPE_NULL; // half, bfloat16, fp8: refused by validate_for_backend
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
  case ReduceOp::kSum: return MPI_SUM;
  case ReduceOp::kProd: return MPI_PROD;
  case ReduceOp::kMax: return MPI_MAX;
  case ReduceOp::kMin: return MPI_MIN;
  default: return MPI_OP_NULL; // avg, mulsum: refused by validate_for_backend
  }
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<std::byte, FreeDeleter>;

// Page-aligned, and touched, so that no page fault lands in a timed loop.
Result<HostBuffer> allocate_host(std::size_t bytes) {
  std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (p == nullptr) {
    return Error(ErrorCode::kSystem, "allocating " + std::to_string(bytes) + " bytes",
                 "out of memory");
  }
  std::memset(p, 0, rounded);
  return HostBuffer(static_cast<std::byte*>(p));
}

class MpiEngine final : public Engine {
public:
  explicit MpiEngine(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiEngine() override {
    if (initialized()) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    FABRIC_ASSIGN_OR_RETURN(send_, allocate_host(send_bytes));
    FABRIC_ASSIGN_OR_RETURN(recv_, allocate_host(recv_bytes));
    send_bytes_ = send_bytes;
    recv_bytes_ = recv_bytes;
    return Ok();
  }

  Result<double> timed_run(const CollectiveCall& call, const TimingOptions& timing) override {
    FABRIC_TRY(run_once(call));
    FABRIC_TRY(check(MPI_Barrier(comm_), "MPI_Barrier"));
    const long n = static_cast<long>(timing.iters) * timing.agg_iters;
    const std::size_t rotate = timing.rotate_bytes;
    // An MPI collective has completed locally when it returns: that is -z's wait, and the
    // host's time to issue the operations (-C) is their time.
    double seconds = 0;
    auto pause = [&] {
      if (timing.injected_delay.count() > 0) std::this_thread::sleep_for(timing.injected_delay);
      if (timing.blocking == 1) MPI_Barrier(comm_);
    };
    if (timing.blocking == 3 || timing.iteration_seconds != nullptr) {
      // An MPI_Wtime pair around each iteration of -m operations; -z 3 adds a barrier
      // after each, left out of the time.
      if (timing.iteration_seconds != nullptr) {
        timing.iteration_seconds->clear();
        timing.iteration_seconds->reserve(static_cast<std::size_t>(timing.iters));
      }
      for (int i = 0; i < timing.iters; ++i) {
        double iteration = 0;
        FABRIC_TRY(time_loop(call, static_cast<long>(i) * timing.agg_iters, timing.agg_iters,
                             rotate, iteration, pause));
        seconds += iteration;
        if (timing.iteration_seconds != nullptr) {
          timing.iteration_seconds->push_back(iteration / timing.agg_iters);
        }
        if (timing.blocking == 3) FABRIC_TRY(check(MPI_Barrier(comm_), "MPI_Barrier"));
      }
    } else if (timing.injected_delay.count() > 0 || timing.blocking == 1) {
      // -z 1: a barrier after each operation, as nccl-tests' startColl does.
      FABRIC_TRY(time_loop(call, 0, n, rotate, seconds, pause));
    } else {
      FABRIC_TRY(time_loop(call, 0, n, rotate, seconds, [] {}));
    }
    return seconds / static_cast<double>(n);
  }

  Result<void> run_once(const CollectiveCall& call) override {
    double ignored = 0;
    return time_loop(call, 0, 1, 0, ignored, [] {});
  }

  Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(std::byte * base, region_at(call, region, offset, bytes.size()));
    std::memcpy(base, bytes.data(), bytes.size());
    return Ok();
  }

  Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(std::byte * base, region_at(call, region, offset, bytes.size()));
    std::memcpy(bytes.data(), base, bytes.size());
    return Ok();
  }

  Result<std::unique_ptr<Engine>> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    FABRIC_TRY(check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub),
                     "MPI_Comm_split"));
    if (sub == MPI_COMM_NULL) return std::unique_ptr<Engine>();
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    auto engine = std::make_unique<MpiEngine>(sub);
    FABRIC_TRY(engine->allocate(send_bytes_, recv_bytes_));
    return std::unique_ptr<Engine>(std::move(engine));
  }

  void poll_aborts(const AbortRequest*) override {}

private:
  // Where `length` bytes of a region start, `offset` bytes in.
  Result<std::byte*> region_at(const CollectiveCall& call, Region region, std::size_t offset,
                               std::size_t length) {
    const std::size_t elt = data_type_size(call.type);
    std::byte* base = nullptr;
    std::size_t size = 0;
    if (region == Region::kInput) {
      base = call.in_place ? recv_.get() + call.counts.send_inplace * rank_ * elt : send_.get();
      size = call.counts.send * elt;
    } else {
      base = recv_.get(); // MPI_IN_PLACE leaves every output at the start of the buffer
      size = call.counts.recv * elt;
    }
    base += call.unalign * elt;
    if (offset > size || length > size - offset) {
      return Error(ErrorCode::kInvalidArgument, "copying a check's data",
                   "beyond the collective's buffer");
    }
    return base + offset;
  }

  // Runs operations [first, first + n) of `call` between two MPI_Wtime readings, each at
  // its rotation offset within `rotate` bytes (rotation_offset); `between` runs after each
  // (a no-op the compiler removes, a barrier, or the test's injected delay).
  template <typename Between>
  Result<void> time_loop(const CollectiveCall& call, long first, long n, std::size_t rotate,
                         double& seconds, Between between) {
    const MPI_Datatype type = mpi_type(call.type);
    const MPI_Op op = mpi_op(call.op);
    const int count = static_cast<int>(call.counts.param);
    const bool in_place = call.in_place;
    const int root = call.root;
    const std::size_t elt = data_type_size(call.type);
    std::byte* const send_base = send_.get() + call.unalign * elt;
    std::byte* const recv_base = recv_.get() + call.unalign * elt;
    void* send = send_base;
    void* recv = recv_base;
    // Moves both buffers to operation i's slot before it runs.
    auto at = [&, i = first](auto&& op_call) mutable {
      const std::size_t shift = rotate ? rotation_offset(call, rotate, i++) : 0;
      send = send_base + shift;
      recv = recv_base + shift;
      return op_call();
    };
    switch (call.collective) {
    case Collective::kAllReduce:
      return loop(n, seconds, "MPI_Allreduce", between, at, [&] {
        return MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, type, op, comm_);
      });
    case Collective::kAllGather:
      return loop(n, seconds, "MPI_Allgather", between, at, [&] {
        return MPI_Allgather(in_place ? MPI_IN_PLACE : send, count, type, recv, count, type, comm_);
      });
    case Collective::kReduceScatter:
      return loop(n, seconds, "MPI_Reduce_scatter_block", between, at, [&] {
        return MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, count, type, op,
                                        comm_);
      });
    case Collective::kBroadcast:
      // Out of place, the root's data starts in its send buffer: moved once, untimed.
      if (!in_place && rank_ == root) std::memcpy(recv, send, call.counts.send * elt);
      return loop(n, seconds, "MPI_Bcast", between, at,
                  [&] { return MPI_Bcast(recv, count, type, root, comm_); });
    case Collective::kReduce: {
      return loop(n, seconds, "MPI_Reduce", between, at, [&] {
        const void* from = in_place ? (rank_ == root ? MPI_IN_PLACE : recv) : send;
        return MPI_Reduce(from, recv, count, type, op, root, comm_);
      });
    }
    case Collective::kAllToAll:
      return loop(n, seconds, "MPI_Alltoall", between, at, [&] {
        return MPI_Alltoall(in_place ? MPI_IN_PLACE : send, count, type, recv, count, type, comm_);
      });
    case Collective::kSendRecv: {
      const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
      if (in_place) {
        return loop(n, seconds, "MPI_Sendrecv_replace", between, at, [&] {
          return MPI_Sendrecv_replace(recv, count, type, next, 0, prev, 0, comm_,
                                      MPI_STATUS_IGNORE);
        });
      }
      return loop(n, seconds, "MPI_Sendrecv", between, at, [&] {
        return MPI_Sendrecv(send, count, type, next, 0, recv, count, type, prev, 0, comm_,
                            MPI_STATUS_IGNORE);
      });
    }
    }
    return Error(ErrorCode::kInternal, "mpi engine", "unknown collective");
  }

  template <typename Between, typename At, typename Op>
  static Result<void> loop(long n, double& seconds, const char* name, Between& between, At& at,
                           Op&& op) {
    const double start = MPI_Wtime();
    for (long i = 0; i < n; ++i) {
      int rc = at(op);
      if (rc != MPI_SUCCESS) return mpi_error(rc, name);
      between();
    }
    seconds = MPI_Wtime() - start;
    return Ok();
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  HostBuffer send_, recv_;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;
};

} // namespace

Result<std::unique_ptr<Engine>> world_engine() {
  MPI_Comm comm;
  FABRIC_TRY(check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup"));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<Engine>(std::make_unique<MpiEngine>(comm));
}

} // namespace fabric::nccltest::mpi
