/* The bare loop fabric-nccltest's mpi backend is measured against
 * (scripts/bench/nccltest_mpi_vs_bare.sh): MPI_Allreduce of floats, sum, on buffers
 * allocated and touched once. It issues the same calls in the same order as fabric-nccltest
 * -c 0 does, so that the two differ only in what surrounds the calls: WARMUP untimed calls
 * at every size first (up to MAX_BYTES), then per size out of place and then in place, each
 * as one untimed call, a barrier, and ITERS calls between two MPI_Wtime readings. The time
 * is the mean over ranks, as fabric-nccltest's -a 1. Only the out-of-place time is printed;
 * the in-place pass is there because it changes what the caches hold for the next size.
 * Call i of a size runs at slot i mod (MAX_BYTES / size) of the buffers, as nccl-tests (and
 * fabric-nccltest) rotate them against cache effects: a loop that reuses one slot measures
 * the cache, not the collective.
 * Rank 0 prints one line per size: "size time_us busbw_GBps", flushed as it goes.
 *
 *   bare_mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP      (sizes double from MIN) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 5) {
    if (rank == 0) fprintf(stderr, "usage: %s MIN_BYTES MAX_BYTES ITERS WARMUP\n", argv[0]);
    MPI_Finalize();
    return 1;
  }
  const size_t min_bytes = strtoull(argv[1], NULL, 10), max_bytes = strtoull(argv[2], NULL, 10);
  const int iters = atoi(argv[3]), warmup = atoi(argv[4]);
  char* send = aligned_alloc(4096, (max_bytes + 4095) / 4096 * 4096);
  char* recv = aligned_alloc(4096, (max_bytes + 4095) / 4096 * 4096);
  if (send == NULL || recv == NULL || iters < 1 || min_bytes < 4) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(send, 0, (max_bytes + 4095) / 4096 * 4096);
  memset(recv, 0, (max_bytes + 4095) / 4096 * 4096);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2)
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send, recv, (int)(bytes / sizeof(float)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int count = (int)(bytes / sizeof(float));
    const size_t slots = max_bytes / bytes;
    double out_of_place = 0;
    for (int in_place = 0; in_place < 2; ++in_place) {
      MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int i = 0; i < iters; ++i) {
        const size_t offset = (size_t)i % slots * bytes;
        MPI_Allreduce(in_place ? MPI_IN_PLACE : send + offset, recv + offset, count, MPI_FLOAT,
                      MPI_SUM, MPI_COMM_WORLD);
      }
      if (!in_place) out_of_place = (MPI_Wtime() - start) / iters;
    }
    double seconds = out_of_place;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    seconds /= size;
    if (rank == 0) {
      const double algbw = (double)count * sizeof(float) / 1e9 / seconds;
      printf("%zu %.3f %.4f\n", bytes, seconds * 1e6, algbw * 2.0 * (size - 1) / size);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
