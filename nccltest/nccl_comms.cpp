// Setting up the nccl backend's communicators and buffers as nccl-tests does: one
// communicator per GPU of the process created in one NCCL group, and -R's registration
// chosen from what the NCCL at run time has.
#include "nccltest/nccl_comms.h"

namespace fabric::nccltest::nccl {
namespace {

constexpr int kNcclWindowsVersion = 22700; // ncclCommWindowRegister, NCCL 2.27

} // namespace

RegistrationPlan plan_registration(const Api& a, Registration requested, int library_version) {
  RegistrationPlan plan;
  plan.mode = requested;
  const bool windows = a.comm_window_register != nullptr && a.comm_window_deregister != nullptr &&
                       library_version >= kNcclWindowsVersion;
  const bool local = a.comm_register != nullptr && a.comm_deregister != nullptr;
  if (plan.mode == Registration::kSymmetric && !windows) {
    plan.mode = Registration::kLocal;
    plan.note = "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local "
                "registration";
  }
  if (plan.mode == Registration::kLocal && !local) {
    plan.mode = Registration::kNone;
    plan.note = "Option -R (register) is not supported before NCCL 2.19. Ignoring";
  }
  return plan;
}

std::string buffer_note(const Api& a, Registration mode) {
  std::string note = a.mem_alloc != nullptr && a.mem_free != nullptr
                         ? "buffers from ncclMemAlloc"
                         : "buffers from cudaMalloc (this NCCL has no ncclMemAlloc)";
  if (mode == Registration::kLocal) note += ", registered with ncclCommRegister (-R 1)";
  if (mode == Registration::kSymmetric)
    note += ", registered as symmetric windows with ncclCommWindowRegister (-R 2)";
  return note;
}

Result<std::vector<ncclComm_t>> init_comms(const Api& a, const ncclUniqueId& id, int nranks,
                                           int first_rank, const std::vector<int>& devices) {
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  FABRIC_TRY(check(a, a.group_start(), "ncclGroupStart"));
  Result<void> made = Ok();
  for (std::size_t i = 0; i < devices.size() && made.ok(); ++i) {
    made = check(a, a.set_device(devices[i]), "cudaSetDevice");
    if (!made.ok()) break;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    made = check(
        a,
        a.comm_init_rank_config(&comms[i], nranks, id, first_rank + static_cast<int>(i), &config),
        "ncclCommInitRankConfig");
  }
  Result<void> ended = check(a, a.group_end(), "ncclGroupEnd");
  if (made.ok()) made = ended;
  if (!made.ok()) {
    for (ncclComm_t c : comms)
      if (c != nullptr) a.comm_abort(c);
    return std::move(made).error();
  }
  return comms;
}

} // namespace fabric::nccltest::nccl
