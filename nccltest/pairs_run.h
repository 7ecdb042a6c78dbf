// Running --pairs: for each round, every rank splits the engine by its node's pair, the
// pairs measure at once (no node in two pairs, so no NIC carries two), and the slower
// rank's time of each pair is gathered on rank 0.
#pragma once

#include "nccltest/pairs.h"
#include "nccltest/session.h"

namespace fabric::nccltest {

// Every rank calls this; rank 0 gets the report.
Result<PairsReport> run_pairs(Session& s, DataType type, ReduceOp op);

} // namespace fabric::nccltest
