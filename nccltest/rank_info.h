// Who each rank is (host, process, device, NIC, free memory), exchanged once at start so
// rank 0 can print the "# Using devices" lines, place ranks on nodes, and check that every
// node has the memory the run needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "nccltest/options.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

struct RankFacts {
  RankInfo info;
  std::string host_id;                 // host name + boot id: same host, same id
  std::optional<uint64_t> free_memory; // host MemAvailable, or the GPU's free memory
  std::string backend_choice;          // what this rank would pick on its own ("nccl"/"mpi")
  std::string backend_reason;
};

// A rank's fields as the JSON report and the exchange between ranks write them (inside an
// object): rank, host, pid, local_rank, device, pci_bus_id, device_name, nic, topology.
void write_rank_info_fields(json::Writer& w, const RankInfo& r);

std::string encode_rank_facts(const RankFacts& facts);
Result<RankFacts> decode_rank_facts(const std::string& text);

// A process's ranks (one per GPU it drives), one encoded rank a line. Decoding wants exactly
// `per_process` of them, as every process drives the same number.
std::string encode_process_facts(const std::vector<RankFacts>& facts);
Result<std::vector<RankFacts>> decode_process_facts(const std::string& text, int per_process);

// This host's short name (up to the first dot, as nccl-tests prints it) and identity.
std::string short_host_name();
std::string host_identity();
// MemAvailable from /proc/meminfo's text; nullopt when absent.
std::optional<uint64_t> mem_available(const std::string& meminfo);

// Fills each rank's local_rank (its index among the ranks with the same host_id) and
// returns the number of nodes.
int place_ranks(std::vector<RankFacts>& ranks);

// One entry per node: its ranks and the memory each of its ranks may use.
std::vector<NodeResources> node_resources(const std::vector<RankFacts>& ranks, BackendKind backend);

} // namespace fabric::nccltest
