// The bare loop fabric-nccltest's nccl backend is measured against
// (scripts/bench/nccltest_nccl_vs_bare.sh): one rank per GPU (local rank = device), the
// NCCL id broadcast over MPI, ncclAllReduce of floats, sum, out of place on one stream,
// WARMUP untimed calls, a barrier, then ITERS calls between two CUDA events; the time is
// the mean over ranks. Rank 0 prints "size time_us busbw_GBps" per size.
//
//   bare_nccl_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP      (sizes double from MIN)
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                              \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                                 \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                                \
    }                                                                                              \
  } while (0)
#define CHECK_NCCL(x)                                                                              \
  do {                                                                                             \
    ncclResult_t r = (x);                                                                          \
    if (r != ncclSuccess) {                                                                        \
      std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r));                                 \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                                \
    }                                                                                              \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, local = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  if (argc != 5) {
    if (rank == 0) std::fprintf(stderr, "usage: %s MIN_BYTES MAX_BYTES ITERS WARMUP\n", argv[0]);
    MPI_Finalize();
    return 1;
  }
  const size_t min_bytes = std::strtoull(argv[1], nullptr, 10);
  const size_t max_bytes = std::strtoull(argv[2], nullptr, 10);
  const int iters = std::atoi(argv[3]), warmup = std::atoi(argv[4]);
  CHECK_CUDA(cudaSetDevice(local));
  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *send = nullptr, *recv = nullptr;
  CHECK_CUDA(cudaMalloc(&send, max_bytes));
  CHECK_CUDA(cudaMalloc(&recv, max_bytes));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    for (int i = 0; i < warmup; ++i) CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    double seconds = ms / 1e3 / iters;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    seconds /= size;
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / 1e9 / seconds;
      std::printf("%zu %.3f %.4f\n", bytes, seconds * 1e6, algbw * 2.0 * (size - 1) / size);
      std::fflush(stdout);
    }
  }
  ncclCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
