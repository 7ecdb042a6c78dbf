#include "nccltest/launch.h"

#include <charconv>
#include <cstdlib>

namespace fabric::nccltest {
namespace {

constexpr int kMaxRanks = 1 << 16;

std::optional<std::string> get(const GetEnv& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Result<int> parse_int_var(const std::string& name, const std::string& text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return Error(ErrorCode::kInvalidEnvironment, name,
                 "'" + text + "' is not a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max));
  }
  return value;
}

Error missing(const std::string& name, const std::string& why) {
  return Error(ErrorCode::kInvalidEnvironment, name, "is not set; " + why)
      .with_hint("a rendezvous needs RANK (or JOB_COMPLETION_INDEX), WORLD_SIZE, MASTER_ADDR "
                 "and MASTER_PORT in every rank's environment");
}

// The variable that says an MPI launcher started us, and its value.
std::optional<std::string> mpi_evidence(const GetEnv& env) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"}) {
    if (auto v = get(env, name)) return std::string(name) + "=" + *v;
  }
  return std::nullopt;
}

} // namespace

std::string_view launch_kind_name(LaunchKind kind) {
  switch (kind) {
  case LaunchKind::kSingle: return "single process";
  case LaunchKind::kMpirun: return "mpirun";
  case LaunchKind::kRendezvous: return "rendezvous";
  }
  return "?";
}

int rank_hint(const GetEnv& env) {
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK", "JOB_COMPLETION_INDEX"}) {
    if (auto v = get(env, name)) {
      int rank = 0;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), rank);
      if (ec == std::errc() && end == v->data() + v->size()) return rank;
      return 0;
    }
  }
  return 0;
}

GetEnv process_env() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

Result<Launch> detect_launch(const GetEnv& env, bool built_with_mpi) {
  Launch launch;
  auto world = get(env, "WORLD_SIZE");
  auto rank = get(env, "RANK");
  auto index = get(env, "JOB_COMPLETION_INDEX");

  if (auto evidence = mpi_evidence(env)) {
    launch.evidence = *evidence;
    if (!built_with_mpi) {
      return Error(ErrorCode::kNotBuilt, "starting under mpirun",
                   "the environment says an MPI launcher started this process (" + *evidence +
                       "), but this build has no MPI: every rank would run alone")
          .with_hint("rebuild with -DWITH_MPI=ON, or start the ranks without mpirun through the "
                     "rendezvous (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
    }
    launch.kind = LaunchKind::kMpirun;
    launch.rank = rank_hint(env);
    if (auto size = get(env, "OMPI_COMM_WORLD_SIZE")) {
      FABRIC_ASSIGN_OR_RETURN(launch.world_size,
                              parse_int_var("OMPI_COMM_WORLD_SIZE", *size, 1, kMaxRanks));
    }
    if (auto local = get(env, "OMPI_COMM_WORLD_LOCAL_RANK")) {
      FABRIC_ASSIGN_OR_RETURN(int lr,
                              parse_int_var("OMPI_COMM_WORLD_LOCAL_RANK", *local, 0, kMaxRanks));
      launch.local_rank = lr;
    }
    if (world || rank) {
      launch.warnings.push_back("RANK/WORLD_SIZE are set but ignored: mpirun started this rank (" +
                                *evidence + ")");
    }
    return launch;
  }

  if (!world) {
    if (rank) {
      return missing("WORLD_SIZE", "RANK=" + *rank + " says this is one rank of several");
    }
    if (index) {
      launch.warnings.push_back("JOB_COMPLETION_INDEX=" + *index +
                                " is set but WORLD_SIZE is not: running as a single process");
    }
    return launch;
  }
  FABRIC_ASSIGN_OR_RETURN(launch.world_size, parse_int_var("WORLD_SIZE", *world, 1, kMaxRanks));
  if (rank) {
    FABRIC_ASSIGN_OR_RETURN(launch.rank, parse_int_var("RANK", *rank, 0, kMaxRanks - 1));
    launch.evidence = "RANK=" + *rank;
  } else if (index) {
    FABRIC_ASSIGN_OR_RETURN(launch.rank,
                            parse_int_var("JOB_COMPLETION_INDEX", *index, 0, kMaxRanks - 1));
    launch.evidence = "JOB_COMPLETION_INDEX=" + *index;
  } else {
    return missing("RANK", "WORLD_SIZE=" + *world +
                               " needs this rank's number (RANK, or "
                               "JOB_COMPLETION_INDEX in an Indexed Job)");
  }
  launch.evidence += " WORLD_SIZE=" + *world;
  if (launch.rank >= launch.world_size) {
    return Error(ErrorCode::kInvalidEnvironment, "RANK",
                 std::to_string(launch.rank) + " is not below WORLD_SIZE " + *world);
  }
  if (auto local = get(env, "LOCAL_RANK")) {
    FABRIC_ASSIGN_OR_RETURN(int lr, parse_int_var("LOCAL_RANK", *local, 0, kMaxRanks));
    launch.local_rank = lr;
  }
  if (launch.world_size == 1) return launch; // a rendezvous of one: nothing to meet
  auto addr = get(env, "MASTER_ADDR");
  if (!addr || addr->empty()) {
    return missing("MASTER_ADDR", "rank " + std::to_string(launch.rank) + " of " + *world +
                                      " needs the address of rank 0");
  }
  auto port = get(env, "MASTER_PORT");
  if (!port) return missing("MASTER_PORT", "rank 0's rendezvous port is needed");
  FABRIC_ASSIGN_OR_RETURN(int p, parse_int_var("MASTER_PORT", *port, 1, 65535));
  launch.kind = LaunchKind::kRendezvous;
  launch.master_addr = *addr;
  launch.master_port = static_cast<uint16_t>(p);
  if (auto token = get(env, "FABRIC_NCCLTEST_TOKEN_FILE")) launch.token_file = *token;
  return launch;
}

} // namespace fabric::nccltest
