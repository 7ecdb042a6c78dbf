#include "common/cuda_runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include <mutex>

namespace fabric::cuda {
namespace {

// The few entry points we use, with the runtime API's C signatures (cudaError_t is an
// int-sized enum; 0 is success, 100 is cudaErrorNoDevice).
struct Runtime {
  int (*get_device_count)(int*) = nullptr;
  int (*set_device)(int) = nullptr;
  int (*malloc)(void**, std::size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*device_get_pci_bus_id)(char*, int, int) = nullptr;
  int (*mem_get_info)(std::size_t*, std::size_t*) = nullptr;
  const char* (*get_error_string)(int) = nullptr;
  std::string load_error;
};

constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNoDevice = 100;
constexpr int kCudaErrorInsufficientDriver = 35;

const Runtime& runtime() {
  static Runtime rt;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = runtime_library();
    if (handle == nullptr) {
      rt.load_error = runtime_library_problem();
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (fn == nullptr && rt.load_error.empty()) {
        rt.load_error = std::string("libcudart lacks ") + name;
      }
    };
    sym(rt.get_device_count, "cudaGetDeviceCount");
    sym(rt.set_device, "cudaSetDevice");
    sym(rt.malloc, "cudaMalloc");
    sym(rt.free, "cudaFree");
    sym(rt.device_get_pci_bus_id, "cudaDeviceGetPCIBusId");
    sym(rt.mem_get_info, "cudaMemGetInfo");
    sym(rt.get_error_string, "cudaGetErrorString");
  });
  return rt;
}

Error cuda_error(const Runtime& rt, int rc, std::string operation) {
  std::string text = rt.get_error_string ? rt.get_error_string(rc) : "error";
  ErrorCode code = ErrorCode::kSystem;
  if (rc == kCudaErrorNoDevice || rc == kCudaErrorInsufficientDriver)
    code = ErrorCode::kUnsupported;
  return Error(code, std::move(operation), text + " (cudaError " + std::to_string(rc) + ")");
}

Result<const Runtime*> loaded() {
  const Runtime& rt = runtime();
  if (driver_version() <= 0) {
    return Error(ErrorCode::kUnsupported, "cudaGetDeviceCount",
                 "no CUDA device (no NVIDIA driver: libcuda.so.1 not found)");
  }
  if (!rt.load_error.empty()) {
    return Error(ErrorCode::kNotBuilt, "loading the CUDA runtime", rt.load_error)
        .with_hint(
            std::string("install a CUDA runtime that fits the driver, or name its folder in ") +
            kLibraryPathEnv);
  }
  return &rt;
}

} // namespace

namespace {

struct LoadedRuntime {
  void* handle = nullptr;
  std::string path;
  std::string problem;
};

// Whether `path` (a file, or a soname the loader resolves) is there to load.
bool library_exists(const std::string& path) {
  if (path.find('/') != std::string::npos) return ::access(path.c_str(), R_OK) == 0;
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

const LoadedRuntime& loaded_runtime() {
  static const LoadedRuntime loaded = [] {
    LoadedRuntime out;
    const int driver = driver_version();
    if (driver <= 0) {
      out.problem = choose_runtime(driver, {}).problem;
      return out;
    }
    const SearchDirs dirs = library_search_dirs_here();
    std::vector<RuntimeCandidate> available;
    for (int major : kRuntimeMajors) {
      for (std::string& path :
           library_candidates("libcudart.so." + std::to_string(major), dirs, FABRIC_CUDA_LIBDIR)) {
        if (library_exists(path)) available.push_back({std::move(path), major});
      }
    }
    RuntimeChoice choice = choose_runtime(driver, available);
    for (const RuntimeCandidate& c : choice.usable) {
      if (void* h = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        out.handle = h;
        out.path = c.path;
        return out;
      }
    }
    out.problem = choice.usable.empty()
                      ? choice.problem
                      : "no CUDA runtime for CUDA " + cuda_version_text(driver) +
                            " could be loaded (" +
                            std::string(dlerror() ? dlerror() : "dlopen failed") + ")";
    return out;
  }();
  return loaded;
}

void* driver_library() {
  static void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return handle;
}

} // namespace

void* runtime_library() {
  return loaded_runtime().handle;
}

std::string runtime_library_problem() {
  return loaded_runtime().problem;
}

std::string runtime_library_path() {
  return loaded_runtime().path;
}

int driver_version() {
  static const int version = [] {
    void* h = driver_library();
    if (h == nullptr) return 0;
    auto get = reinterpret_cast<int (*)(int*)>(dlsym(h, "cuDriverGetVersion"));
    int v = 0;
    if (get == nullptr || get(&v) != 0) return 0;
    return v;
  }();
  return version;
}

int driver_device_count() {
  void* h = driver_library();
  if (h == nullptr) return 0;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(h, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0) return 0;
  return n;
}

SearchDirs library_search_dirs_here() {
  return library_search_dirs(std::getenv(kLibraryPathEnv),
                             python_site_packages(std::getenv("VIRTUAL_ENV"),
                                                  std::getenv("CONDA_PREFIX"),
                                                  std::getenv("HOME")));
}

Result<int> device_count() {
  FABRIC_ASSIGN_OR_RETURN(const Runtime* rt, loaded());
  int count = 0;
  int rc = rt->get_device_count(&count);
  if (rc == kCudaErrorNoDevice || (rc == kCudaSuccess && count == 0)) {
    return Error(ErrorCode::kUnsupported, "cudaGetDeviceCount", "no CUDA device");
  }
  // A node without the NVIDIA driver answers "insufficient driver": to a user, that is a
  // node without a usable GPU.
  if (rc == kCudaErrorInsufficientDriver) {
    return Error(ErrorCode::kUnsupported, "cudaGetDeviceCount",
                 "no CUDA device (the NVIDIA driver is not loaded or too old)");
  }
  if (rc != kCudaSuccess) return cuda_error(*rt, rc, "cudaGetDeviceCount");
  return count;
}

Result<DeviceSummary> describe_device(int index) {
  FABRIC_ASSIGN_OR_RETURN(int count, device_count());
  if (index < 0 || index >= count) {
    return Error(ErrorCode::kNotFound, "CUDA device " + std::to_string(index),
                 "this host has " + std::to_string(count) + " (0 to " + std::to_string(count - 1) +
                     ")");
  }
  const Runtime* rt = *loaded();
  DeviceSummary summary;
  summary.index = index;
  FABRIC_ASSIGN_OR_RETURN(summary.pci_bus_id, pci_bus_id(index));
  if (int rc = rt->set_device(index); rc != kCudaSuccess)
    return cuda_error(*rt, rc, "cudaSetDevice");
  std::size_t free_bytes = 0;
  if (int rc = rt->mem_get_info(&free_bytes, &summary.total_memory); rc != kCudaSuccess) {
    return cuda_error(*rt, rc, "cudaMemGetInfo");
  }
  return summary;
}

Result<std::string> pci_bus_id(int index) {
  FABRIC_ASSIGN_OR_RETURN(const Runtime* rt, loaded());
  // 13 bytes hold "DDDD:BB:DD.F"; the room above allows for wider domains.
  char bus_id[32] = {};
  if (int rc = rt->device_get_pci_bus_id(bus_id, sizeof bus_id - 1, index); rc != kCudaSuccess) {
    return cuda_error(*rt, rc, "cudaDeviceGetPCIBusId(" + std::to_string(index) + ")");
  }
  return std::string(bus_id);
}

Result<std::vector<std::string>> pci_bus_ids() {
  FABRIC_ASSIGN_OR_RETURN(int count, device_count());
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    FABRIC_ASSIGN_OR_RETURN(std::string id, pci_bus_id(i));
    ids.push_back(std::move(id));
  }
  return ids;
}

Result<void> check_allocation(int index, std::size_t bytes) {
  FABRIC_TRY(describe_device(index));
  const Runtime* rt = *loaded();
  void* ptr = nullptr;
  if (int rc = rt->malloc(&ptr, bytes); rc != kCudaSuccess)
    return cuda_error(*rt, rc, "cudaMalloc");
  if (int rc = rt->free(ptr); rc != kCudaSuccess) return cuda_error(*rt, rc, "cudaFree");
  return Ok();
}

} // namespace fabric::cuda
