// Which CUDA runtime (libcudart.so.N) and NCCL (libnccl.so.2) to load, as pure decisions
// over what the machine offers, so that they can be tested without a GPU.
//
// The runtime must fit the driver: libcudart.so.N needs a driver for CUDA N.0 or newer
// (CUDA's minor-version compatibility), so the newest runtime whose major is at most the
// driver's (cuDriverGetVersion) is chosen, never simply the first soname that loads.
//
// Where the libraries are looked for, in order:
//   1. the folders of FABRIC_CUDA_LIBRARY_PATH (colon-separated), when set;
//   2. the loader's own path (LD_LIBRARY_PATH, the ldconfig cache), by soname;
//   3. a pip-installed CUDA runtime and NCCL (the nvidia-* wheels PyTorch depends on):
//      nvidia/cu13/lib, nvidia/cuda_runtime/lib, nvidia/nccl/lib and torch/lib under the
//      site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local and /usr;
//   4. the CUDA toolkit's folder the build was configured with.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fabric::cuda {

inline constexpr const char* kLibraryPathEnv = "FABRIC_CUDA_LIBRARY_PATH";

// The runtime majors fabrickit can use (its calls exist in all of them), newest first.
inline constexpr int kRuntimeMajors[] = {13, 12, 11};

// The folders of steps 1 and 3 above: `library_path` is FABRIC_CUDA_LIBRARY_PATH's value
// (or nullptr), `site_packages` the Python package folders to look under.
struct SearchDirs {
  std::vector<std::string> first; // before the loader's path
  std::vector<std::string> then;  // after it
};
SearchDirs library_search_dirs(const char* library_path,
                               const std::vector<std::string>& site_packages);

// The site-packages and dist-packages folders that exist under those prefixes.
std::vector<std::string> python_site_packages(const char* virtual_env, const char* conda_prefix,
                                              const char* home);

// Where to try `file`, in order: each of `dirs.first`, the bare name (the loader's path),
// each of `dirs.then`, then `toolkit_dir` when not empty.
std::vector<std::string> library_candidates(const std::string& file, const SearchDirs& dirs,
                                            const std::string& toolkit_dir);

struct RuntimeCandidate {
  std::string path; // a soname for the loader's path, or a file
  int major = 0;    // N of libcudart.so.N
};

struct RuntimeChoice {
  std::vector<RuntimeCandidate> usable; // to try in order: newest fitting major first
  std::string problem;                  // why none, when `usable` is empty
};

// `driver_version`: cuDriverGetVersion's value (1000 * major + 10 * minor), 0 without a
// driver; `available`: the runtimes that exist, in search order.
RuntimeChoice choose_runtime(int driver_version, const std::vector<RuntimeCandidate>& available);

// "12.4" from 12040.
std::string cuda_version_text(int version);

} // namespace fabric::cuda
