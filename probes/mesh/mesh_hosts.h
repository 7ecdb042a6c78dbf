// The hosts of a mesh and their place in the fabric, from `--hosts`.
//
// The hosts file has one host a line, with its place in the fabric as optional
// key=value words after it:
//
//   # HOST[:PORT]        [leaf=NAME] [rail=NAME] [spine=NAME]
//   10.0.1.1:18515       leaf=l01 rail=0 spine=s1
//   node-b               leaf=l01 rail=1 spine=s1   # a comment
//
// '#' starts a comment and blank lines are skipped. A NAME is 1 to 64 characters of
// letters, digits, '.', '_', '-' and ':'. Either every host names its leaf or none does,
// since the topology patterns (leaf-local, cross-leaf) need all of them. The file is read
// as hostile input: at most kMaxMeshHostsFileBytes, lines of at most kMaxMeshHostsLine
// characters, at most kMaxMeshHosts hosts; every error names the line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "libs/agent_channel/tcp_socket.h"

namespace fabric::probes {

inline constexpr std::size_t kMaxMeshHosts = 20000;
inline constexpr std::size_t kMaxMeshHostsLine = 512;
inline constexpr std::size_t kMaxMeshHostsFileBytes = 4 << 20;
inline constexpr std::size_t kMaxPlaceName = 64;

// Where a host sits: "" where the file does not say.
struct FabricPlace {
  std::string leaf;  // its top-of-rack (leaf) switch
  std::string rail;  // its rail, in a rail-optimised fabric
  std::string spine; // the spine group its leaf's uplinks go to
};

struct MeshHost {
  std::string name; // the entry as the user wrote it: matrix labels
  Endpoint agent;
  FabricPlace place;
};

// Hosts from `--hosts`: a hosts file (above), or a comma-separated list of HOST[:PORT]
// (without places). Duplicates and fewer than two hosts are errors naming the entry.
Result<std::vector<MeshHost>> load_mesh_hosts(const std::string& arg, uint16_t default_port);
Result<std::vector<MeshHost>> parse_mesh_hosts(const std::vector<std::string>& entries,
                                               uint16_t default_port, std::string_view where);
// The text of a hosts file; `where` names it in errors.
Result<std::vector<MeshHost>> parse_mesh_hosts_file(std::string_view text, uint16_t default_port,
                                                    std::string_view where);

// Each host's leaf, in host order ("" where none is given).
std::vector<std::string> leaves_of(const std::vector<MeshHost>& hosts);

} // namespace fabric::probes
