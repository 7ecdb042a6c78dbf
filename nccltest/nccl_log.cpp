#include "nccltest/nccl_log.h"
#include "common/strings.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fabric::nccltest {
namespace {

// "[0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB ..." -> mlx5_0:1/RoCE, mlx5_1:1/RoCE
std::vector<std::string> using_list(std::string_view rest) {
  std::vector<std::string> out;
  rest = rest.substr(0, rest.find(';'));
  std::istringstream words{std::string(rest)};
  std::string word;
  while (words >> word) {
    if (word.size() < 3 || word[0] != '[' || word == "[RO]") continue;
    auto close = word.find(']');
    if (close == std::string::npos || close + 1 >= word.size()) continue;
    out.push_back(word.substr(close + 1));
  }
  return out;
}

std::optional<int> int_after(std::string_view s, std::string_view marker) {
  auto at = s.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string rest(s.substr(at + marker.size()));
  try {
    std::size_t used = 0;
    int v = std::stoi(rest, &used);
    if (used == 0) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

void parse_info(std::string_view m, TransportReport& r) {
  if (m.starts_with("Using network ")) {
    r.network = std::string(trim(m.substr(14)));
  } else if (m.starts_with("NET/IB : Using")) {
    r.ib_devices = using_list(m.substr(14));
  } else if (m.starts_with("NET/Socket : Using")) {
    r.socket_devices = using_list(m.substr(18));
  } else if (m.starts_with("Channel ") && m.find(" via ") != std::string_view::npos) {
    std::string_view via = m.substr(m.find(" via ") + 5);
    if (via.starts_with("NET/")) {
      ++r.net_channels;
      bool gdr = via.find("/GDRDMA") != std::string_view::npos;
      // On only when every NET channel reads GPU memory directly.
      r.gpudirect_rdma = (r.net_channels == 1 ? true : r.gpudirect_rdma.value_or(true)) && gdr;
    } else if (via.starts_with("P2P")) {
      ++r.p2p_channels;
    } else if (via.starts_with("SHM")) {
      ++r.shm_channels;
    }
  } else if (m.find("GPU Direct RDMA Enabled") != std::string_view::npos) {
    if (!r.gpudirect_rdma.has_value()) r.gpudirect_rdma = true;
  } else if (m.find("GPU Direct RDMA Disabled") != std::string_view::npos) {
    r.gpudirect_rdma = false;
  } else if (m.starts_with("NCCL_IB_TC set by environment to ")) {
    r.traffic_class = int_after(m, "to ");
  } else if (m.starts_with("NCCL_IB_GID_INDEX set by environment to ")) {
    r.gid_index = int_after(m, "to ");
  } else if (m.find("qp_num") != std::string_view::npos ||
             m.find(" qpn ") != std::string_view::npos) {
    if (auto gid = int_after(m, " GID ")) r.gid_index = *gid;
  }
}

} // namespace

TransportReport parse_nccl_log(std::string_view text) {
  TransportReport r;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (auto at = line.find("NCCL INFO "); at != std::string_view::npos) {
      r.any_line = true;
      parse_info(trim(line.substr(at + 10)), r);
    } else if (auto w = line.find("NCCL WARN "); w != std::string_view::npos) {
      r.any_line = true;
      if (r.warnings.size() < 5) r.warnings.emplace_back(trim(line.substr(w + 10)));
    }
  }
  return r;
}

bool uses_rdma(const TransportReport& r) {
  return r.network == "IB" || (r.network.empty() && !r.ib_devices.empty());
}

bool socket_fallback(const TransportReport& r) {
  return r.network == "Socket" && r.net_channels > 0;
}

std::string render_transport_lines(const TransportReport& r) {
  if (!r.any_line) return "# Transport: unknown (no NCCL INFO log was captured)\n";
  std::string out = "# Transport: network " + (r.network.empty() ? std::string("?") : r.network);
  const auto& devices = uses_rdma(r) ? r.ib_devices : r.socket_devices;
  if (!devices.empty()) {
    out += " over";
    for (const std::string& d : devices)
      out += " " + d;
  }
  out += r.gid_index ? ", GID index " + std::to_string(*r.gid_index) : std::string(", GID index ?");
  out += r.traffic_class ? ", traffic class " + std::to_string(*r.traffic_class)
                         : std::string(", traffic class default (0)");
  if (r.gpudirect_rdma)
    out += std::string(", GPUDirect RDMA ") + (*r.gpudirect_rdma ? "on" : "off");
  out += "; channels: " + std::to_string(r.net_channels) + " NET, " +
         std::to_string(r.p2p_channels) + " P2P, " + std::to_string(r.shm_channels) + " SHM\n";
  if (socket_fallback(r)) {
    out += "# WARNING: NCCL FELL BACK TO SOCKETS (NET/Socket): inter-node traffic goes over "
           "TCP, not RDMA; check NCCL_IB_HCA, the RDMA devices and their GIDs\n";
  }
  for (const std::string& w : r.warnings)
    out += "# NCCL WARN " + w + "\n";
  return out;
}

NcclLogPlan plan_nccl_log(const char* debug, const char* debug_file, const char* subsys,
                          const std::string& directory) {
  NcclLogPlan plan;
  auto given = [](const char* v) { return v != nullptr && *v != '\0'; };
  if (given(debug) || given(debug_file)) {
    plan.note = std::string("NCCL's log follows your ") +
                (given(debug_file) ? "NCCL_DEBUG_FILE" : "NCCL_DEBUG=" + std::string(debug)) +
                "; the transport is not read from it";
    return plan;
  }
  plan.capture = true;
  plan.set.emplace_back("NCCL_DEBUG", "INFO");
  plan.set.emplace_back("NCCL_DEBUG_FILE", directory + "/nccl.%h.%p");
  if (!given(subsys)) plan.set.emplace_back("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV");
  return plan;
}

std::vector<std::string> nccl_warn_lines(std::string_view text, std::size_t max_lines) {
  std::vector<std::string> out;
  while (!text.empty() && out.size() < max_lines) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.find(" NCCL WARN ") != std::string_view::npos) out.emplace_back(line);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return out;
}

std::string read_nccl_logs(const std::string& directory, const std::string& prefix,
                           std::size_t max_bytes) {
  std::string out;
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.starts_with(prefix)) names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::ifstream in(directory + "/" + name, std::ios::binary);
    std::string chunk(max_bytes, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(max_bytes));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    out += chunk;
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

} // namespace fabric::nccltest
