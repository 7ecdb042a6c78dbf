// Failure triage: from an errno or a completion status and the facts around it to the
// likely cause a user can act on, and the exit status that goes with it.
#include <cerrno>

#include <gtest/gtest.h>

#include "probes/rdma/rdma_triage.h"

namespace fabric::probes {
namespace {

using rdma::GidType;

TriageFacts roce_facts() {
  TriageFacts f;
  f.device = "mlx5_0";
  f.port = 1;
  f.netdev = "eth2";
  f.peer_ipv4 = "10.0.0.2";
  f.local_gid_type = GidType::kRoceV2;
  f.remote_gid_type = GidType::kRoceV2;
  f.local_gid = "::ffff:10.0.0.1";
  f.remote_gid = "::ffff:10.0.0.2";
  f.local_gid_index = 3;
  f.local_active_mtu = 4096;
  f.remote_active_mtu = 4096;
  f.path_mtu = 4096;
  return f;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(RdmaTriage, GidTypeMismatchAtRtr) {
  TriageFacts f = roce_facts();
  f.remote_gid_type = GidType::kRoceV1;
  f.remote_gid = "fe80::1";
  std::string cause = likely_cause(RdmaStep::kModifyToRtr, EINVAL, f);
  EXPECT_TRUE(contains(cause, "GID type mismatch")) << cause;
  EXPECT_TRUE(contains(cause, "RoCE v2")) << cause;
  EXPECT_TRUE(contains(cause, "RoCE v1")) << cause;
  EXPECT_TRUE(contains(cause, "--gid-index")) << cause;
}

TEST(RdmaTriage, MtuLargerThanThePort) {
  TriageFacts f = roce_facts();
  f.local_active_mtu = 1024;
  std::string cause = likely_cause(RdmaStep::kModifyToRtr, EINVAL, f);
  EXPECT_TRUE(contains(cause, "MTU mismatch")) << cause;
  EXPECT_TRUE(contains(cause, "4096")) << cause;
  EXPECT_TRUE(contains(cause, "1024")) << cause;
}

TEST(RdmaTriage, NeighbourResolution) {
  for (int err : {ETIMEDOUT, EHOSTUNREACH, ENODATA}) {
    std::string cause = likely_cause(RdmaStep::kModifyToRtr, err, roce_facts());
    EXPECT_TRUE(contains(cause, "neighbour (ARP) resolution failed")) << err << ": " << cause;
    EXPECT_TRUE(contains(cause, "10.0.0.2")) << cause;
    EXPECT_TRUE(contains(cause, "ip neigh show dev eth2")) << cause;
  }
  TriageFacts cm = roce_facts();
  cm.cm_event = "RDMA_CM_EVENT_ADDR_ERROR";
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kResolveAddress, ETIMEDOUT, cm), "neighbour"));
  cm.cm_event = "RDMA_CM_EVENT_ROUTE_ERROR";
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kResolveRoute, ETIMEDOUT, cm), "no route"));
}

TEST(RdmaTriage, NoGidForTheAddress) {
  std::string cause = likely_cause(RdmaStep::kModifyToRtr, EINVAL, roce_facts());
  EXPECT_TRUE(contains(cause, "no usable GID")) << cause;
  EXPECT_TRUE(contains(cause, "index 3 of mlx5_0 port 1")) << cause;
  std::string cm = likely_cause(RdmaStep::kResolveAddress, EADDRNOTAVAIL, roce_facts());
  EXPECT_TRUE(contains(cm, "no GID for that address")) << cm;
}

TEST(RdmaTriage, LockedMemoryLimit) {
  TriageFacts f = roce_facts();
  f.memlock_limit = 64 * 1024;
  f.register_bytes = 128ull << 20;
  std::string cause = likely_cause(RdmaStep::kRegisterMemory, ENOMEM, f);
  EXPECT_TRUE(contains(cause, "locked-memory limit (ulimit -l) is 64 KiB")) << cause;
  EXPECT_TRUE(contains(cause, "128 MiB")) << cause;
  EXPECT_TRUE(contains(cause, "ulimit -l unlimited")) << cause;
  // Unlimited, or large enough: not the limit.
  f.memlock_limit.reset();
  EXPECT_FALSE(contains(likely_cause(RdmaStep::kRegisterMemory, ENOMEM, f), "ulimit"));
  f.memlock_limit = 1ull << 30;
  EXPECT_FALSE(contains(likely_cause(RdmaStep::kRegisterMemory, ENOMEM, f), "ulimit"));
}

TEST(RdmaTriage, ConnectionManagerRefusals) {
  TriageFacts f = roce_facts();
  f.cm_event = "RDMA_CM_EVENT_REJECTED";
  f.cm_status = 28;
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kConnect, 0, f), "rejected"));
  f.cm_event = "RDMA_CM_EVENT_UNREACHABLE";
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kConnect, 0, f), "did not answer"));
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kAccept, ETIMEDOUT, roce_facts()), "never arrived"));
}

TEST(RdmaTriage, DataPhase) {
  TriageFacts f = roce_facts();
  f.wc_status = 12; // IBV_WC_RETRY_EXC_ERR
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kDataPhase, 0, f), "stopped acknowledging"));
  f.wc_status = 13; // IBV_WC_RNR_RETRY_EXC_ERR
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kDataPhase, 0, f), "no receive buffer"));
  f.wc_status = 2; // IBV_WC_LOC_QP_OP_ERR: rxe from a netdev in a pod
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kDataPhase, 0, f), "no route from the GID's netdev"));
  f.wc_status = 10; // IBV_WC_REM_ACCESS_ERR
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kDataPhase, 0, f), "refused the access"));
  f.wc_status.reset();
  f.stalled = true;
  f.timeout_text = "10s";
  EXPECT_TRUE(contains(likely_cause(RdmaStep::kDataPhase, 0, f), "no completion for 10s"));
  EXPECT_EQ(wc_status_text(12), "transport retry counter exceeded");
  EXPECT_EQ(wc_status_text(5), "Work Request Flushed Error");
  EXPECT_EQ(wc_status_text(99), "unknown status");
}

TEST(RdmaTriage, ErrorsExitTwoWithTheCauseAsHint) {
  TriageFacts f = roce_facts();
  f.remote_gid_type = GidType::kRoceV1;
  Error e = triage_error(RdmaStep::kModifyToRtr, "ibv_modify_qp QP 17", EINVAL, f);
  // EINVAL alone would be a usage error (exit 1); a failed transition is not.
  EXPECT_EQ(e.code(), ErrorCode::kSystem);
  EXPECT_EQ(exit_status_for(e.code()), kExitSystem);
  EXPECT_EQ(e.message(),
            "moving the queue pair to RTR: ibv_modify_qp QP 17: Invalid argument (EINVAL)");
  EXPECT_EQ(e.hint().rfind("likely cause: GID type mismatch", 0), 0u) << e.hint();

  Error t = triage_error(RdmaStep::kResolveAddress, "rdma_resolve_addr", ETIMEDOUT, f);
  EXPECT_EQ(t.code(), ErrorCode::kTimeout);
  EXPECT_EQ(exit_status_for(t.code()), kExitSystem);

  Error p = triage_error(RdmaStep::kOpenDevice, "ibv_open_device", EACCES, f);
  EXPECT_EQ(p.code(), ErrorCode::kPermission);
  EXPECT_TRUE(contains(p.hint(), "uverbs")) << p.hint();

  TriageFacts wc = roce_facts();
  wc.wc_status = 12;
  Error w = triage_error(RdmaStep::kDataPhase, "send completion on QP 17", 0, wc);
  EXPECT_TRUE(contains(w.message(), "transport retry counter exceeded (status 12)")) << w.message();

  // Nothing specific known: no hint rather than a wrong one.
  Error plain = triage_error(RdmaStep::kModifyToRts, "ibv_modify_qp", EIO, roce_facts());
  EXPECT_TRUE(plain.hint().empty()) << plain.hint();
}

} // namespace
} // namespace fabric::probes
