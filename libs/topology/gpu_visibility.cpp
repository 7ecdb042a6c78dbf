#include "libs/topology/gpu_visibility.h"
#include "common/strings.h"

#include <algorithm>
#include <charconv>

namespace fabric::topo {
namespace {

// Environment values are outside input: a list longer than this is cut, with a note.
constexpr std::size_t kMaxEntries = 256;
constexpr std::size_t kMaxEntryLength = 128;

// "0, 2,GPU-ab" -> {"0", "2", "GPU-ab"}; "" -> {}.
std::vector<std::string> split_list(const std::string& value, std::vector<std::string>& notes,
                                    const std::string& variable) {
  std::vector<std::string> entries;
  if (value.empty()) return entries;
  std::size_t start = 0;
  while (true) {
    if (entries.size() == kMaxEntries) {
      notes.push_back(variable + " lists more than " + std::to_string(kMaxEntries) +
                      " entries: the rest are not read");
      break;
    }
    const std::size_t comma = value.find(',', start);
    entries.emplace_back(trim(std::string_view(value).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return entries;
}

std::optional<std::size_t> parse_index(const std::string& entry) {
  std::size_t index = 0;
  auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
  if (entry.empty() || ec != std::errc() || end != entry.data() + entry.size()) return {};
  return index;
}

std::string gpu_text(const std::vector<GpuIdentity>& gpus, std::size_t i) {
  return "GPU" + std::to_string(i) + " (" + to_string(gpus[i].address) + ")";
}

// The GPU among `candidates` whose UUID starts with `prefix`, when exactly one does.
std::optional<std::size_t> by_uuid(const std::vector<GpuIdentity>& gpus,
                                   const std::vector<std::size_t>& candidates,
                                   const std::string& prefix) {
  std::optional<std::size_t> match;
  for (std::size_t c : candidates) {
    if (gpus[c].uuid.empty() || !gpus[c].uuid.starts_with(prefix)) continue;
    if (match) return std::nullopt; // ambiguous
    match = c;
  }
  return match;
}

std::vector<std::size_t> every_gpu(const std::vector<GpuIdentity>& gpus) {
  std::vector<std::size_t> all(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i)
    all[i] = i;
  return all;
}

// One NVIDIA_VISIBLE_DEVICES entry: a host index, a UUID, or a MIG device of a GPU.
std::optional<std::size_t> nvidia_entry(const std::vector<GpuIdentity>& gpus,
                                        const std::string& entry, std::string& why) {
  const auto all = every_gpu(gpus);
  std::string id = entry;
  if (auto colon = id.find(':'); colon != std::string::npos) id = id.substr(0, colon); // GPU:MIG
  if (id.starts_with("MIG-GPU-")) {
    id = id.substr(4, id.find('/') == std::string::npos ? std::string::npos : id.find('/') - 4);
  } else if (id.starts_with("MIG-")) {
    why = "a MIG device UUID does not say which GPU holds it (sysfs cannot tell; nvidia-smi "
          "-L can): give --gpu instead";
    return std::nullopt;
  }
  if (auto index = parse_index(id)) {
    if (*index < gpus.size()) return *index;
    why = "this node has " + std::to_string(gpus.size()) + " GPU(s)";
    return std::nullopt;
  }
  if (id.starts_with("GPU-")) {
    if (auto match = by_uuid(gpus, all, id)) return *match;
    why = "no GPU has this UUID (UUIDs are read from /proc/driver/nvidia/gpus)";
    return std::nullopt;
  }
  why = "not an index, a GPU UUID or a MIG device";
  return std::nullopt;
}

std::vector<std::size_t> nvidia_visible(const std::vector<GpuIdentity>& gpus,
                                        const VisibilityInputs& in, VisibleGpus& out) {
  const std::string& value = *in.nvidia_visible_devices;
  out.source = "NVIDIA_VISIBLE_DEVICES=" + value;
  if (value == "all") return every_gpu(gpus);
  if (value.empty() || value == "none" || value == "void") return {};
  std::vector<std::string> entries = value.front() == '/'
                                         ? in.nvidia_device_files
                                         : split_list(value, out.notes, "NVIDIA_VISIBLE_DEVICES");
  std::vector<std::size_t> chosen;
  for (const auto& entry : entries) {
    std::string why;
    auto gpu = nvidia_entry(gpus, entry.substr(0, kMaxEntryLength), why);
    if (!gpu) {
      out.notes.push_back("NVIDIA_VISIBLE_DEVICES entry '" + entry.substr(0, kMaxEntryLength) +
                          "' names no GPU of this node: " + why);
    } else if (std::find(chosen.begin(), chosen.end(), *gpu) == chosen.end()) {
      chosen.push_back(*gpu);
    }
  }
  // The container runtime exposes them as devices, which CUDA numbers in PCI order.
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void apply_cuda_visible(const std::vector<GpuIdentity>& gpus, const std::vector<std::size_t>& base,
                        const std::string& value, VisibleGpus& out) {
  out.source =
      (out.source == "every GPU" ? "" : out.source + ", then ") + "CUDA_VISIBLE_DEVICES=" + value;
  std::vector<std::size_t> chosen;
  for (const auto& raw : split_list(value, out.notes, "CUDA_VISIBLE_DEVICES")) {
    const std::string entry = raw.substr(0, kMaxEntryLength);
    std::optional<std::size_t> gpu;
    std::string why;
    if (auto index = parse_index(entry)) {
      if (*index < base.size()) {
        gpu = base[*index];
      } else {
        why = "the job sees " + std::to_string(base.size()) + " GPU(s)";
      }
    } else if (entry.starts_with("GPU-")) {
      gpu = by_uuid(gpus, base, entry);
      if (!gpu) why = "no single visible GPU has a UUID starting with it";
    } else if (entry.starts_with("MIG-")) {
      why = "a MIG device UUID does not say which GPU holds it: give --gpu instead";
    } else {
      why = "not an index or a GPU UUID";
    }
    if (gpu && std::find(chosen.begin(), chosen.end(), *gpu) != chosen.end()) {
      why = "it names " + gpu_text(gpus, *gpu) + " a second time";
      gpu.reset();
    }
    if (!gpu) {
      out.notes.push_back("CUDA_VISIBLE_DEVICES entry '" + entry + "' names no GPU (" + why +
                          "): CUDA ignores it and every entry after it");
      break;
    }
    chosen.push_back(*gpu);
  }
  out.gpus = std::move(chosen);
}

} // namespace

VisibleGpus visible_gpus(const std::vector<GpuIdentity>& gpus, const VisibilityInputs& in) {
  VisibleGpus out;
  if (in.cuda_devices) {
    out.source = "the CUDA runtime's devices";
    for (std::size_t d = 0; d < in.cuda_devices->size(); ++d) {
      const PciAddress& address = (*in.cuda_devices)[d];
      auto it = std::find_if(gpus.begin(), gpus.end(),
                             [&](const GpuIdentity& g) { return g.address == address; });
      if (it == gpus.end()) {
        out.notes.push_back("CUDA device " + std::to_string(d) + " (" + to_string(address) +
                            ") is not a GPU in sysfs");
      } else {
        out.gpus.push_back(static_cast<std::size_t>(it - gpus.begin()));
      }
    }
    return out;
  }

  std::vector<std::size_t> base;
  if (in.nvidia_visible_devices) {
    base = nvidia_visible(gpus, in, out);
  } else if (in.driver_gpus && !in.driver_gpus->empty() && in.driver_gpus->size() < gpus.size()) {
    out.source = "the container's GPUs (/proc/driver/nvidia/gpus)";
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (std::find(in.driver_gpus->begin(), in.driver_gpus->end(), gpus[i].address) !=
          in.driver_gpus->end()) {
        base.push_back(i);
      }
    }
  } else {
    out.source = "every GPU";
    base = every_gpu(gpus);
  }
  if (in.cuda_visible_devices) {
    apply_cuda_visible(gpus, base, *in.cuda_visible_devices, out);
  } else {
    out.gpus = std::move(base);
  }
  return out;
}

} // namespace fabric::topo
