// Which CUDA runtime fits the driver, and where the CUDA runtime and NCCL are looked for,
// as pure decisions (no GPU here). What a GPU run adds: that the chosen runtime loads and
// sees the device, with NCCL from a pip-installed wheel.
#include "common/cuda_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace fabric::cuda {
namespace {

std::vector<std::string> paths(const RuntimeChoice& c) {
  std::vector<std::string> out;
  for (const RuntimeCandidate& r : c.usable)
    out.push_back(r.path);
  return out;
}

using Paths = std::vector<std::string>;

TEST(CudaLibrary, TheNewestRuntimeTheDriverSupportsIsChosen) {
  const std::vector<RuntimeCandidate> found = {
      {"libcudart.so.13", 13},
      {"/opt/cuda/lib64/libcudart.so.13", 13},
      {"libcudart.so.12", 12},
      {"/site/nvidia/cuda_runtime/lib/libcudart.so.12", 12}};
  // A CUDA 13 driver: 13 first, in search order, then 12.
  EXPECT_EQ(paths(choose_runtime(13000, found)),
            (Paths{"libcudart.so.13", "/opt/cuda/lib64/libcudart.so.13", "libcudart.so.12",
                   "/site/nvidia/cuda_runtime/lib/libcudart.so.12"}));
  // A CUDA 12.4 driver: libcudart.so.13 would say "no CUDA device"; it is never tried.
  EXPECT_EQ(paths(choose_runtime(12040, found)),
            (Paths{"libcudart.so.12", "/site/nvidia/cuda_runtime/lib/libcudart.so.12"}));
  // Search order does not outrank a newer major.
  EXPECT_EQ(paths(choose_runtime(13000, {{"a/libcudart.so.12", 12}, {"b/libcudart.so.13", 13}})),
            (Paths{"b/libcudart.so.13", "a/libcudart.so.12"}));
}

TEST(CudaLibrary, NoFittingRuntimeSaysWhy) {
  RuntimeChoice old_driver = choose_runtime(12040, {{"libcudart.so.13", 13}});
  EXPECT_TRUE(old_driver.usable.empty());
  EXPECT_EQ(old_driver.problem,
            "the NVIDIA driver supports CUDA 12.4, older than every CUDA runtime found "
            "(libcudart.so.13); a runtime needs a driver of its major version or newer");
  RuntimeChoice none = choose_runtime(12020, {});
  EXPECT_EQ(none.problem, "the NVIDIA driver supports CUDA 12.2, but no CUDA runtime "
                          "(libcudart.so.12 or older) was found");
  RuntimeChoice no_driver = choose_runtime(0, {{"libcudart.so.13", 13}});
  EXPECT_TRUE(no_driver.usable.empty());
  EXPECT_EQ(no_driver.problem, "no NVIDIA driver (libcuda.so.1 not found)");
}

TEST(CudaLibrary, SearchOrderIsTheVariableTheLoaderThenPipWheelsThenTheToolkit) {
  SearchDirs dirs = library_search_dirs("/opt/a::/opt/b", {"/venv/lib/python3.11/site-packages"});
  EXPECT_EQ(dirs.first, (Paths{"/opt/a", "/opt/b"}));
  EXPECT_EQ(library_candidates("libnccl.so.2", dirs, "/usr/local/cuda/lib64"),
            (Paths{"/opt/a/libnccl.so.2", "/opt/b/libnccl.so.2", "libnccl.so.2",
                   "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnccl.so.2",
                   "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libnccl.so.2",
                   "/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
                   "/venv/lib/python3.11/site-packages/torch/lib/libnccl.so.2",
                   "/usr/local/cuda/lib64/libnccl.so.2"}));
  EXPECT_TRUE(library_search_dirs(nullptr, {}).first.empty());
}

TEST(CudaLibrary, SitePackagesAreFoundUnderAVirtualEnvironmentAndHome) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("cuda_library_test." + std::to_string(::getpid()));
  fs::create_directories(root / "venv/lib/python3.12/site-packages");
  fs::create_directories(root / "venv/lib/python3.11/site-packages");
  fs::create_directories(root / "home/.local/lib/python3.11/site-packages");
  std::vector<std::string> found =
      python_site_packages((root / "venv").c_str(), nullptr, (root / "home").c_str());
  ASSERT_GE(found.size(), 3u);
  // The virtual environment first, its newest Python first, then the user's own.
  EXPECT_EQ(found[0], (root / "venv/lib/python3.12/site-packages").string());
  EXPECT_EQ(found[1], (root / "venv/lib/python3.11/site-packages").string());
  EXPECT_EQ(found[2], (root / "home/.local/lib/python3.11/site-packages").string());
  fs::remove_all(root);
}

} // namespace
} // namespace fabric::cuda
