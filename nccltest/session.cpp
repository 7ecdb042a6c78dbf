#include "nccltest/session.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/cuda_runtime.h"
#include "common/sysfs.h"
#include "nccltest/cgroup_memory.h"
#include "nccltest/comm_split.h"
#include "nccltest/gpu_map.h"
#include "nccltest/line_rate.h"
#include "nccltest/memory_plan.h"
#include "nccltest/mpi_runtime.h"
#include "nccltest/nccl_backend.h"
#include "nccltest/placement.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

std::chrono::milliseconds seconds_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

// How long a control-plane exchange of the run may wait for the other ranks: they may be
// in a long phase (the checks of a large size), so generously more than a phase. Without
// MPI, the exchanges before the run wait --rendezvous-timeout instead (TcpGroup::join).
std::chrono::milliseconds exchange_timeout(const Options& o) {
  return o.timeout_s > 0 ? seconds_ms(o.timeout_s * 4 + 60) : std::chrono::milliseconds(3600s);
}

struct LocalChoice {
  BackendKind backend;
  std::string reason;     // for the header
  std::string gpu_reason; // what the GPU probe said, when it was asked
};

Result<LocalChoice> choose_locally(const Options& o) {
  if (o.backend) return LocalChoice{*o.backend, "chosen with --backend", ""};
  nccl::Availability gpu = nccl::probe();
  FABRIC_ASSIGN_OR_RETURN(BackendKind backend,
                          default_backend(gpu.usable, gpu.driver_gpus, gpu.reason));
  return LocalChoice{backend, "the default here: " + gpu.reason, gpu.reason};
}

Result<std::unique_ptr<Group>> open_group(Session& s, const LocalChoice& local, int* argc,
                                          char*** argv) {
  switch (s.launch.kind) {
  case LaunchKind::kMpirun: FABRIC_TRY(mpi::init(argc, argv)); return mpi::world_group();
  case LaunchKind::kRendezvous: {
    FABRIC_ASSIGN_OR_RETURN(auto group, TcpGroup::join(s.launch, s.board.get(),
                                                       seconds_ms(s.options.rendezvous_timeout_s),
                                                       exchange_timeout(s.options)));
    s.server = group->plane().server.get();
    s.client = group->plane().client.get();
    s.rendezvous = group.get();
    return std::unique_ptr<Group>(std::move(group));
  }
  case LaunchKind::kSingle:
    if (local.backend == BackendKind::kMpi) {
      FABRIC_TRY(mpi::init(argc, argv));
      return mpi::world_group();
    }
    return make_single_group();
  }
  return Error(ErrorCode::kInternal, "opening the group", "unknown launch");
}

// Everything a process says about its ranks (one per GPU it drives, per_process of them),
// its devices chosen by its local rank among the node's processes.
Result<std::vector<RankFacts>> describe_self(Session& s, int local_rank) {
  RankFacts f;
  RankInfo& r = f.info;
  r.pid = static_cast<int>(::getpid());
  r.host = short_host_name();
  f.host_id = host_identity();
  std::vector<int> devices{-1};
  if (s.backend == BackendKind::kNccl) {
    nccl::Availability gpu = nccl::probe();
    if (!gpu.usable) {
      return Error(ErrorCode::kUnsupported, "the nccl backend", gpu.reason)
          .with_hint("run the mpi backend (--backend mpi) on nodes without a GPU");
    }
    FABRIC_ASSIGN_OR_RETURN(devices,
                            devices_for_process(local_rank, s.per_process, gpu.device_count,
                                                std::getenv("NCCL_TESTS_DEVICE")));
  } else {
    r.pci_bus_id = "host";
    r.device_name = "host memory";
    // The room: MemAvailable is the node's, and a pod's memory cgroup may allow less.
    if (auto meminfo = read_file("/proc/meminfo"); meminfo.ok())
      f.free_memory = mem_available(*meminfo);
    if (std::optional<uint64_t> cgroup = cgroup_memory_room())
      f.free_memory = f.free_memory ? std::min(*f.free_memory, *cgroup) : *cgroup;
  }
  std::string route = read_file("/proc/net/route").value_or(std::string());
  std::vector<RankFacts> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    RankFacts mine = f;
    mine.info.rank = s.rank() * s.per_process + static_cast<int>(i);
    mine.info.local_rank = local_rank * s.per_process + static_cast<int>(i);
    mine.info.device = devices[i];
    if (devices[i] >= 0) {
      FABRIC_ASSIGN_OR_RETURN(nccl::DeviceFacts d, nccl::describe_device(devices[i]));
      mine.info.device_name = d.name;
      mine.info.pci_bus_id = d.pci_bus_id;
      mine.free_memory = d.free_memory;
    }
    NicChoice choice;
    choice.requested = s.options.nic;
    if (const char* hca = std::getenv("NCCL_IB_HCA")) choice.ib_hca = hca;
    choice.local_rank = mine.info.local_rank;
    FABRIC_ASSIGN_OR_RETURN(mine.info.nic, detect_nic(SysfsReader(), choice, route));
    mine.info.topology = gpu_nic_placement(SysfsReader(), mine.info);
    out.push_back(std::move(mine));
  }
  return out;
}

// -g, -t and -R on the backend that runs: the nccl backend drives -g x -t GPUs per process;
// on host memory they mean nothing, and are noted rather than refused (a script written for
// nccl-tests still runs, and the header's nThread/nGpus say what ran).
Result<void> plan_ranks_per_process(Session& s) {
  const Options& o = s.options;
  if (s.backend == BackendKind::kNccl) {
    s.per_process = o.ngpus * o.nthreads;
    if (o.pairs && s.per_process > 1) {
      return Error(ErrorCode::kInvalidArgument, "--pairs",
                   "splits one GPU per process, but -g " + std::to_string(o.ngpus) + " -t " +
                       std::to_string(o.nthreads) + " drives " + std::to_string(s.per_process))
          .with_hint("run --pairs with one rank per GPU (mpirun -np <GPUs>, -g 1 -t 1)");
    }
    return Ok();
  }
  s.per_process = 1;
  if (o.ngpus > 1 || o.nthreads > 1) {
    s.setup_notes.push_back("-g " + std::to_string(o.ngpus) + " -t " + std::to_string(o.nthreads) +
                            " ignored: the mpi backend runs one rank per process on host memory "
                            "(start more ranks with mpirun -np)");
  }
  if (o.registration > 0) {
    s.setup_notes.push_back("-R " + std::to_string(o.registration) +
                            " ignored: the mpi backend has no NCCL buffers to register");
  }
  return Ok();
}

// Rank 0 checks what needs every rank's facts; every rank gets the same verdict.
Result<void> agree(Session& s, const Result<void>& rank0_verdict) {
  std::string text = rank0_verdict.ok() ? "" : rank0_verdict.error().message();
  if (!rank0_verdict.ok() && !rank0_verdict.error().hint().empty()) {
    text += "\nhint: " + rank0_verdict.error().hint();
  }
  FABRIC_ASSIGN_OR_RETURN(std::string verdict, s.group->broadcast(text));
  if (verdict.empty()) return Ok();
  if (s.rank() == 0) return rank0_verdict.error();
  return Error(ErrorCode::kInvalidArgument, "rank 0 refused the run", verdict);
}

// Every rank plans alike, from the same facts: the largest size that fits on every rank.
Result<void> plan_sizes(Session& s) {
  const NodeResources* tightest = nullptr;
  std::vector<NodeResources> nodes = node_resources(s.ranks, s.backend);
  for (const NodeResources& n : nodes) {
    if (n.memory_bytes && (tightest == nullptr || *n.memory_bytes < *tightest->memory_bytes))
      tightest = &n;
  }
  if (tightest == nullptr) return Ok();
  const std::string where =
      tightest->host + (s.backend == BackendKind::kNccl ? "'s GPU with the least memory free"
                                                        : " (memory available per rank)");
  FABRIC_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(s.options, s.backend, s.nranks(),
                                                       tightest->memory_bytes, where));
  s.options.sweep.max_bytes = plan.max_bytes;
  s.memory_note = plan.note;
  return Ok();
}

Result<void> world_checks(Session& s) {
  if (s.split && s.options.pairs) {
    return Error(ErrorCode::kInvalidArgument, "--pairs",
                 "splits the ranks itself; unset NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK");
  }
  std::vector<NodeResources> nodes = node_resources(s.ranks, s.backend);
  FABRIC_TRY(validate_for_world(s.options, s.backend, s.nranks(), nodes));
  if (s.options.min_busbw_pct) {
    LineRate rate = line_rate_ceiling(s.rank_infos());
    if (!rate.ceiling_gbytes) {
      return Error(ErrorCode::kInvalidArgument, "--min-busbw-pct",
                   "this run has no line-rate ceiling to take a percentage of (" + rate.basis + ")")
          .with_hint("use --min-busbw GBPS, or --nic to name the NIC whose speed counts");
    }
  }
  return Ok();
}

// Our copy of NCCL's log, once read.
void remove_nccl_logs(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, "nccl.", 5) == 0) ::unlink((dir + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// NCCL_TESTS_SPLIT(_MASK): every rank's group, for the device lines and the header.
Result<void> assign_groups(Session& s) {
  FABRIC_ASSIGN_OR_RETURN(
      s.split, split_color(std::getenv(kSplitMaskEnv), std::getenv(kSplitEnv), s.rank()));
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> colors,
                          s.group->allgather(s.split ? std::to_string(*s.split) : ""));
  // The colour is the process's (nccl-tests' proc): every GPU of a process is in its group.
  std::vector<int> groups;
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    const std::size_t process = r / static_cast<std::size_t>(s.per_process);
    if (process >= colors.size()) break;
    s.ranks[r].info.group = colors[process].empty() ? 0 : std::atoi(colors[process].c_str());
    if (std::find(groups.begin(), groups.end(), s.ranks[r].info.group) == groups.end())
      groups.push_back(s.ranks[r].info.group);
  }
  if (s.split) {
    s.split_note = std::string(std::getenv(kSplitMaskEnv) ? kSplitMaskEnv : kSplitEnv) + ": " +
                   std::to_string(groups.size()) +
                   " groups, each running the collective on its own communicator; times "
                   "are aggregated over every rank, as nccl-tests does";
  }
  return Ok();
}

// The smallest of every rank's `mine`, so that every rank decides alike.
Result<int> smallest_over_ranks(Session& s, int mine) {
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> all, s.group->allgather(std::to_string(mine)));
  for (const std::string& theirs : all)
    mine = std::min(mine, std::atoi(theirs.c_str()));
  return mine;
}

// Every rank drops or refuses fp8 alike, from the smallest compute capability of the run.
Result<void> agree_on_fp8(Session& s, const std::vector<int>& devices) {
  int mine = std::numeric_limits<int>::max();
  for (int device : devices) {
    FABRIC_ASSIGN_OR_RETURN(nccl::DeviceFacts facts, nccl::describe_device(device));
    mine = std::min(mine, facts.compute_capability);
  }
  FABRIC_ASSIGN_OR_RETURN(int lowest, smallest_over_ranks(s, mine));
  return restrict_fp8(s.options, s.nccl_library, lowest);
}

// Every rank leaves out the same pairs, from the smallest communicator of the run (a split
// can give one group a single rank while another has several).
Result<void> agree_on_one_rank_fp8(Session& s) {
  FABRIC_ASSIGN_OR_RETURN(int smallest, smallest_over_ranks(s, s.engine->size()));
  return restrict_one_rank_fp8(s.options, smallest);
}

} // namespace

Session::~Session() {
  if (monitor) monitor->stop();
  relay_nccl_warnings(*this);
  if (!nccl_log_dir.empty()) remove_nccl_logs(nccl_log_dir);
  if (watchdog_plane.client) watchdog_plane.client->stop();
  if (watchdog_plane.server) watchdog_plane.server->stop();
  engine.reset();
  group.reset();
  mpi::finalize();
}

std::vector<RankInfo> Session::rank_infos() const {
  std::vector<RankInfo> out;
  for (const RankFacts& f : ranks)
    out.push_back(f.info);
  return out;
}

Result<void> open_session(Session& s, int* argc, char*** argv,
                          std::function<void(const HangReport&)> on_hang, bool& shared_error) {
  shared_error = false;
  const Options& o = s.options;
  auto chosen = choose_locally(o);
  if (!chosen.ok()) return chosen.error(); // this rank's alone: it says so itself
  const LocalChoice local = *chosen;
  if (s.launch.kind == LaunchKind::kRendezvous && local.backend == BackendKind::kMpi) {
    shared_error = true;
    return Error(ErrorCode::kInvalidArgument, "--backend mpi",
                 "the mpi backend needs mpirun, but this rank was started without it (" +
                     s.launch.evidence + ")" +
                     (o.backend ? "" : ", and " + local.gpu_reason + " for the nccl backend"))
        .with_hint("start the ranks with mpirun, or run the nccl backend on GPU nodes");
  }
  // A backend named on the command line is the same on every rank: a type or operation it
  // lacks is a usage error before MPI starts (a singleton MPI_Init spawns orted and reads
  // the machine's PCI topology, seconds for nothing).
  if (o.backend) {
    if (auto checked = validate_for_backend(s.options, *o.backend); !checked.ok()) {
      shared_error = true;
      return checked.error();
    }
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(o.timeout_s));
  if (o.timeout_s > 0 && s.launch.rank == 0) {
    s.board = std::make_unique<ProgressBoard>(s.launch.world_size, timeout, WatchdogClock::now());
  }
  FABRIC_ASSIGN_OR_RETURN(s.group, open_group(s, local, argc, argv));
  if (s.group->rank() != 0) s.board.reset();

  // Agree on the backend: every rank must pick the same.
  std::string mine = std::string(backend_name(local.backend)) + "\n" + local.reason;
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> choices, s.group->allgather(mine));
  for (std::size_t r = 0; r < choices.size(); ++r) {
    if (choices[r].substr(0, choices[r].find('\n')) != backend_name(local.backend)) {
      shared_error = true;
      return Error(ErrorCode::kInvalidConfig, "choosing the backend",
                   "rank 0 would run " + choices[0].substr(0, choices[0].find('\n')) +
                       " but rank " + std::to_string(r) + " " +
                       choices[r].substr(0, choices[r].find('\n')) + " (" +
                       choices[r].substr(choices[r].find('\n') + 1) + ")")
          .with_hint("give every rank the same --backend, or start ranks only on GPU nodes");
    }
  }
  s.backend = local.backend;
  s.backend_reason = local.reason;
  // A backend named on the command line was checked before the group opened.
  if (!o.backend) {
    if (auto checked = validate_for_backend(s.options, s.backend); !checked.ok()) {
      shared_error = true;
      return checked.error();
    }
  }

  if (auto planned = plan_ranks_per_process(s); !planned.ok()) {
    shared_error = true;
    return planned;
  }

  // Local ranks first (a process's GPUs depend on it), then every rank's description.
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> hosts, s.group->allgather(host_identity()));
  int local_rank = 0;
  for (int r = 0; r < s.rank(); ++r)
    local_rank += hosts[r] == hosts[s.rank()] ? 1 : 0;
  auto self = describe_self(s, local_rank);
  // A process that cannot describe itself stops every process, not only itself.
  std::string encoded = self.ok() ? encode_process_facts(*self) : "";
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> all, s.group->allgather(encoded));
  if (!self.ok()) return std::move(self).error();
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) {
      return Error(ErrorCode::kSystem, "describing the ranks",
                   "rank " + std::to_string(r) + " could not describe itself (see its error)");
    }
    FABRIC_ASSIGN_OR_RETURN(std::vector<RankFacts> facts,
                            decode_process_facts(all[r], s.per_process));
    for (RankFacts& f : facts)
      s.ranks.push_back(std::move(f));
  }
  s.nodes = place_ranks(s.ranks);
  if (auto grouped = assign_groups(s); !grouped.ok()) {
    shared_error = true;
    return grouped;
  }
  if (auto planned = plan_sizes(s); !planned.ok()) {
    shared_error = true;
    return planned;
  }

  Result<void> verdict = s.rank() == 0 ? world_checks(s) : Result<void>();
  if (auto agreed = agree(s, verdict); !agreed.ok()) {
    shared_error = true;
    return agreed;
  }

  if (o.timeout_s > 0) {
    if (s.launch.kind == LaunchKind::kMpirun ||
        (s.launch.kind == LaunchKind::kSingle && s.size() > 1)) {
      FABRIC_ASSIGN_OR_RETURN(s.watchdog_plane,
                              open_watchdog_channel(*s.group, s.board.get(), exchange_timeout(o)));
      s.server = s.watchdog_plane.server.get();
      s.client = s.watchdog_plane.client.get();
    }
    if (s.board) {
      // The watchdog follows processes; a process driving several GPUs names them all.
      for (int p = 0; p < s.size(); ++p) {
        const RankInfo& first = s.ranks[static_cast<std::size_t>(p * s.per_process)].info;
        const int last = first.device + s.per_process - 1;
        s.board->set_label(p, {first.host, first.device < 0 ? "host memory"
                                           : s.per_process == 1
                                               ? "device " + std::to_string(first.device)
                                               : "devices " + std::to_string(first.device) + "-" +
                                                     std::to_string(last)});
      }
      s.board->connected(0, WatchdogClock::now());
      s.progress.attach_board(s.board.get(), 0);
      s.monitor = std::make_unique<WatchdogMonitor>(*s.board, std::move(on_hang));
    }
    if (s.client) s.progress.attach_client(s.client);
  }
  auto abort_handler = [&s](int code, const std::string& reason) { abort_run(s, code, reason); };
  if (s.client) s.client->on_abort(abort_handler);
  if (s.server) s.server->on_abort_request(abort_handler);
  return Ok();
}

Result<void> open_engine(Session& s) {
  Beat setup = s.progress.begin("setup");
  if (s.backend == BackendKind::kMpi) {
    FABRIC_ASSIGN_OR_RETURN(s.engine, mpi::world_engine());
  } else {
    nccl::EngineSetup setup_options;
    setup_options.devices.clear();
    for (int i = 0; i < s.per_process; ++i) {
      setup_options.devices.push_back(
          s.ranks[static_cast<std::size_t>(s.rank() * s.per_process + i)].info.device);
    }
    setup_options.registration = s.options.registration;
    setup_options.threads = s.options.nthreads;
    setup_options.stream_null = s.options.stream_null;
    setup_options.cta_policy = s.options.cta_policy;
    setup_options.memory_report = s.options.memory_report;
    // NCCL's INFO log, read back for the transport report, unless the user set NCCL's
    // log up (nccl_log.h). NCCL reads these variables when it first initialises, below.
    const char* debug = std::getenv("NCCL_DEBUG");
    const char* debug_file = std::getenv("NCCL_DEBUG_FILE");
    const char* subsys = std::getenv("NCCL_DEBUG_SUBSYS");
    char dir[] = "/tmp/fabric-nccltest.XXXXXX";
    NcclLogPlan plan = plan_nccl_log(debug, debug_file, subsys, "");
    s.nccl_log_note = plan.note;
    if (plan.capture && ::mkdtemp(dir) != nullptr) {
      s.nccl_log_dir = dir;
      for (const auto& [name, value] : plan_nccl_log(debug, debug_file, subsys, dir).set)
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    if (s.options.pairs) FABRIC_TRY(nccl::pairs_supported());
    FABRIC_ASSIGN_OR_RETURN(s.engine, nccl::make_engine(*s.group, setup_options));
    s.nccl_library = nccl::library_version();
    for (std::string& note : setup_options.notes)
      s.setup_notes.push_back(std::move(note));
    s.gpu_memory.initialization = setup_options.init_memory;
    FABRIC_TRY(agree_on_fp8(s, setup_options.devices));
  }
  if (s.split) {
    FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> mine, s.engine->split(*s.split, s.rank()));
    s.engine = std::move(mine);
    if (uses_root(s.options.collective) && s.options.root >= s.engine->size()) {
      return Error(ErrorCode::kInvalidArgument, "-r/--root",
                   std::to_string(s.options.root) + " is not a rank of this rank's group (" +
                       std::to_string(s.engine->size()) + " ranks)");
    }
  }
  if (s.backend == BackendKind::kNccl) FABRIC_TRY(agree_on_one_rank_fp8(s));
  s.engine->poll_aborts(&s.abort);
  // nccl-tests allocates both buffers at the larger size: in place, the receive buffer
  // also holds the input (reduce_scatter's whole input). The size was planned to fit.
  // -u: room for the widest type's elements past the start, as nccl-tests pads them.
  const std::size_t each = buffer_size(s.options, s.options.sweep.max_bytes, s.engine->size()) +
                           8 * static_cast<std::size_t>(s.options.unalign);
  std::vector<std::int64_t> free_before;
  if (s.options.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(free_before, s.engine->free_device_memory());
  }
  FABRIC_TRY(s.engine->allocate(each, each));
  if (s.options.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(std::vector<std::int64_t> free_after, s.engine->free_device_memory());
    s.gpu_memory.user_allocated = largest_drop(free_before, free_after);
  }
  s.progress.end(setup);
  // The job is assembled: from here an exchange may wait on a long phase of another rank.
  if (s.rendezvous != nullptr) s.rendezvous->begin_run();
  return Ok();
}

[[noreturn]] void abort_run(Session& s, int exit_code, const std::string& reason) {
  // The main thread polls many times a second where it waits; longer means it is blocked
  // where it cannot (an MPI collective, NCCL's connection set-up).
  constexpr std::chrono::milliseconds kOwnerGrace{3000};
  // Once it took over, MPI_Abort or _exit follow at once; this only bounds a stuck one.
  constexpr std::chrono::seconds kOwnerExit{10};
  std::fflush(stdout);
  if (s.rank() != 0) spdlog::error("rank {}: {}", s.rank(), reason);
  if (s.server) s.server->send_abort(exit_code, reason);
  s.abort.post(exit_code, reason);
  if (s.abort.wait_for_owner(kOwnerGrace)) std::this_thread::sleep_for(kOwnerExit);
  std::fflush(stdout);
  ::_exit(s.abort.exit_code());
}

void relay_nccl_warnings(Session& s) {
  if (s.nccl_log_dir.empty() || s.nccl_warnings_relayed.exchange(true)) return;
  for (const std::string& line : nccl_warn_lines(read_nccl_logs(s.nccl_log_dir, "nccl.")))
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void carry_out_abort(Session& s) {
  if (!s.abort.requested()) return;
  s.abort.take_over();
  relay_nccl_warnings(s);
  std::fflush(stdout);
  if (mpi::initialized()) mpi::abort_world(s.abort.exit_code());
  ::_exit(s.abort.exit_code());
}

} // namespace fabric::nccltest
