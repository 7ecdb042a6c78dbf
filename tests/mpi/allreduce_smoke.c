/* mpi tier: the MPI toolchain that fabric-nccltest builds on really launches ranks and
 * reduces across them. Each rank contributes rank+1 in every element; every element of
 * the result must be n(n+1)/2 on every rank. Exit 0 on success, 1 on a wrong sum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  enum { kCount = 1 << 16 };
  double* send = malloc(kCount * sizeof *send);
  double* recv = malloc(kCount * sizeof *recv);
  for (int i = 0; i < kCount; ++i) send[i] = rank + 1;
  MPI_Allreduce(send, recv, kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  const double expected = size * (size + 1) / 2.0;
  int bad = 0;
  for (int i = 0; i < kCount; ++i) bad += recv[i] != expected;
  int total_bad = 0;
  MPI_Reduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("allreduce over %d ranks: %s (%d wrong elements)\n", size,
           total_bad == 0 ? "ok" : "WRONG", total_bad);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total_bad == 0 ? 0 : 1;
}
