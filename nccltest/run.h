// A whole fabric-nccltest run, from the parsed options to the exit status: the session,
// the sweeps (or the pair rounds), the text report on stdout as rows complete, and the
// files asked for (JSON, Prometheus, plots).
#pragma once

#include "nccltest/fault.h"
#include "nccltest/launch.h"
#include "nccltest/options.h"

namespace fabric::nccltest {

// Exit statuses: 0 ok; 1 usage; 2 system; 3 a check failed (wrong data, a busbw threshold,
// --require-rdma); 4 not built or unsupported; 5 the watchdog aborted a hung run.
int run_nccltest(Options options, Launch launch, FaultPlan fault, int* argc, char*** argv);

} // namespace fabric::nccltest
