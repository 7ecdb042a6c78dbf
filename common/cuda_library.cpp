#include "common/cuda_library.h"

#include <glob.h>

#include <algorithm>
#include <string_view>

#include "common/strings.h"

namespace fabric::cuda {
namespace {

// Where the nvidia-* wheels put their libraries, relative to site-packages.
constexpr const char* kWheelLibDirs[] = {"nvidia/cu13/lib", "nvidia/cuda_runtime/lib",
                                         "nvidia/nccl/lib", "torch/lib"};

std::vector<std::string> glob_dirs(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  // Newest Python first, so that the environment in use now wins over leftovers.
  std::sort(out.rbegin(), out.rend());
  return out;
}

} // namespace

SearchDirs library_search_dirs(const char* library_path,
                               const std::vector<std::string>& site_packages) {
  SearchDirs dirs;
  for (std::string_view rest = library_path != nullptr ? library_path : ""; !rest.empty();) {
    const std::size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    if (!dir.empty()) dirs.first.emplace_back(dir);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  for (const std::string& site : site_packages) {
    for (const char* sub : kWheelLibDirs)
      dirs.then.push_back(site + "/" + sub);
  }
  return dirs;
}

std::vector<std::string> python_site_packages(const char* virtual_env, const char* conda_prefix,
                                              const char* home) {
  std::vector<std::string> prefixes;
  if (virtual_env != nullptr && *virtual_env != '\0') prefixes.emplace_back(virtual_env);
  if (conda_prefix != nullptr && *conda_prefix != '\0') prefixes.emplace_back(conda_prefix);
  if (home != nullptr && *home != '\0') prefixes.push_back(std::string(home) + "/.local");
  prefixes.emplace_back("/usr/local");
  prefixes.emplace_back("/usr");
  std::vector<std::string> out;
  for (const std::string& prefix : prefixes) {
    for (const char* kind : {"site-packages", "dist-packages"}) {
      for (std::string& dir : glob_dirs(prefix + "/lib/python3*/" + kind))
        out.push_back(std::move(dir));
    }
  }
  return out;
}

std::vector<std::string> library_candidates(const std::string& file, const SearchDirs& dirs,
                                            const std::string& toolkit_dir) {
  std::vector<std::string> out;
  for (const std::string& d : dirs.first)
    out.push_back(d + "/" + file);
  out.push_back(file);
  for (const std::string& d : dirs.then)
    out.push_back(d + "/" + file);
  if (!toolkit_dir.empty()) out.push_back(toolkit_dir + "/" + file);
  return out;
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

RuntimeChoice choose_runtime(int driver_version, const std::vector<RuntimeCandidate>& available) {
  RuntimeChoice choice;
  if (driver_version <= 0) {
    choice.problem = "no NVIDIA driver (libcuda.so.1 not found)";
    return choice;
  }
  const int driver_major = driver_version / 1000;
  for (const RuntimeCandidate& c : available) {
    if (c.major <= driver_major) choice.usable.push_back(c);
  }
  std::stable_sort(
      choice.usable.begin(), choice.usable.end(),
      [](const RuntimeCandidate& a, const RuntimeCandidate& b) { return a.major > b.major; });
  if (!choice.usable.empty()) return choice;
  const std::string driver = "the NVIDIA driver supports CUDA " + cuda_version_text(driver_version);
  if (available.empty()) {
    choice.problem = driver + ", but no CUDA runtime (libcudart.so." +
                     std::to_string(driver_major) + " or older) was found";
    return choice;
  }
  std::vector<std::string> paths;
  for (const RuntimeCandidate& c : available)
    paths.push_back(c.path);
  const std::string found = join(paths);
  choice.problem = driver + ", older than every CUDA runtime found (" + found +
                   "); a runtime needs a driver of its major version or newer";
  return choice;
}

} // namespace fabric::cuda
