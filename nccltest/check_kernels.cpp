#include "nccltest/check_kernels.h"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "nccltest/check_plan.h"

namespace fabric::nccltest::nccl {
namespace {

// The few driver entry points the kernels need, looked up once.
struct Driver {
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  std::string error; // why the driver cannot be used
};

template <typename Fn>
void bind_driver(void* handle, Fn& fn, const char* name, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn == nullptr && error.empty()) error = std::string("libcuda.so.1 lacks ") + name;
}

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      d.error = "the CUDA driver library (libcuda.so.1) was not found";
      return;
    }
    bind_driver(h, d.module_load_data, "cuModuleLoadData", d.error);
    bind_driver(h, d.module_unload, "cuModuleUnload", d.error);
    bind_driver(h, d.module_get_function, "cuModuleGetFunction", d.error);
    bind_driver(h, d.launch_kernel, "cuLaunchKernel", d.error);
    bind_driver(h, d.get_error_string, "cuGetErrorString", d.error);
  });
  return d;
}

Result<void> check_driver(const Driver& d, CUresult rc, const char* operation) {
  if (rc == CUDA_SUCCESS) return Ok();
  const char* text = nullptr;
  if (d.get_error_string != nullptr) d.get_error_string(rc, &text);
  return Error(ErrorCode::kSystem, operation,
               std::string(text != nullptr ? text : "CUDA driver error") + " (CUresult " +
                   std::to_string(static_cast<int>(rc)) + ")");
}

} // namespace

struct CheckKernels::Module {
  CUmodule module = nullptr;
  CUfunction fill = nullptr;
  CUfunction verify = nullptr;
};

CheckKernels::CheckKernels(std::unique_ptr<Module> module) : module_(std::move(module)) {}

CheckKernels::~CheckKernels() {
  if (module_ && module_->module != nullptr) driver().module_unload(module_->module);
}

Result<std::unique_ptr<CheckKernels>> CheckKernels::load() {
  const std::span<const unsigned char> image = check_kernels_image();
  if (image.empty()) {
    return Error(ErrorCode::kNotBuilt, "loading the check kernels",
                 "this build has no device kernels (nvcc was not found at build time)");
  }
  const Driver& d = driver();
  if (!d.error.empty()) return Error(ErrorCode::kUnsupported, "loading the check kernels", d.error);
  auto m = std::make_unique<Module>();
  FABRIC_TRY(check_driver(d, d.module_load_data(&m->module, image.data()),
                          "cuModuleLoadData (the check kernels)"));
  std::unique_ptr<CheckKernels> kernels(new CheckKernels(std::move(m)));
  Module& mod = *kernels->module_;
  FABRIC_TRY(check_driver(d, d.module_get_function(&mod.fill, mod.module, "fabric_check_fill"),
                          "cuModuleGetFunction"));
  FABRIC_TRY(check_driver(d, d.module_get_function(&mod.verify, mod.module, "fabric_check_verify"),
                          "cuModuleGetFunction"));
  return kernels;
}

Result<void> CheckKernels::fill(const check_math::Params& params, DataType type, void* region,
                                const CheckLaunch& launch, void* stream) const {
  const Driver& d = driver();
  check_math::Params p = params;
  int t = static_cast<int>(type);
  void* data = static_cast<char*>(region) + launch.first * data_type_size(type);
  uint64_t first = launch.first, count = launch.count;
  void* args[] = {&p, &t, &data, &first, &count};
  return check_driver(d,
                      d.launch_kernel(module_->fill, launch.blocks, 1, 1, launch.threads, 1, 1, 0,
                                      static_cast<CUstream>(stream), args, nullptr),
                      "cuLaunchKernel (generating the input)");
}

Result<void> CheckKernels::verify(const check_math::Params& params, DataType type,
                                  const void* region, const CheckLaunch& launch,
                                  unsigned long long* result, void* stream) const {
  const Driver& d = driver();
  check_math::Params p = params;
  int t = static_cast<int>(type);
  const void* data = static_cast<const char*>(region) + launch.first * data_type_size(type);
  uint64_t first = launch.first, count = launch.count;
  void* args[] = {&p, &t, &data, &first, &count, &result};
  return check_driver(d,
                      d.launch_kernel(module_->verify, launch.blocks, 1, 1, launch.threads, 1, 1, 0,
                                      static_cast<CUstream>(stream), args, nullptr),
                      "cuLaunchKernel (verifying the output)");
}

} // namespace fabric::nccltest::nccl
