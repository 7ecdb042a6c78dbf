#include "probes/rdma/gpu_buffer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <utility>

#include "common/cuda_runtime.h"
#include "common/fd.h"

namespace fabric::probes {
namespace {

// GPUDirect RDMA pins GPU memory in 64 KiB pages; dma-buf export needs page alignment.
constexpr std::size_t kGpuPage = 64 * 1024;

// Entry points of the CUDA runtime and driver, with their C signatures (cudaError_t and
// CUresult are int-sized enums; 0 is success).
struct CudaApi {
  int (*set_device)(int) = nullptr;
  int (*malloc)(void**, std::size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memset)(void*, int, std::size_t) = nullptr;
  int (*device_synchronize)() = nullptr;
  const char* (*get_error_string)(int) = nullptr;
  // Driver API (libcuda): a CUdevice is an int, a CUdeviceptr an unsigned 64-bit integer.
  int (*cu_device_get)(int*, int) = nullptr;
  int (*cu_device_get_attribute)(int*, int, int) = nullptr;
  int (*cu_mem_get_handle)(void*, unsigned long long, std::size_t, int,
                           unsigned long long) = nullptr;
  std::string runtime_error;
};

constexpr int kAttrDmaBufSupported = 124; // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
constexpr int kHandleTypeDmaBufFd = 1;    // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD

const CudaApi& api() {
  static CudaApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    void* rt = cuda::runtime_library();
    if (rt == nullptr) {
      a.runtime_error = "libcudart not found";
      return;
    }
    auto sym = [](void* lib, auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    };
    sym(rt, a.set_device, "cudaSetDevice");
    sym(rt, a.malloc, "cudaMalloc");
    sym(rt, a.free, "cudaFree");
    sym(rt, a.memset, "cudaMemset");
    sym(rt, a.device_synchronize, "cudaDeviceSynchronize");
    sym(rt, a.get_error_string, "cudaGetErrorString");
    if (!a.set_device || !a.malloc || !a.free || !a.memset || !a.device_synchronize) {
      a.runtime_error = "libcudart lacks cudaMalloc/cudaFree/cudaMemset";
      return;
    }
    // The driver library comes with the NVIDIA driver, not the toolkit; the toolkit's stub
    // is never loaded (it fails every call).
    if (void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      sym(drv, a.cu_device_get, "cuDeviceGet");
      sym(drv, a.cu_device_get_attribute, "cuDeviceGetAttribute");
      sym(drv, a.cu_mem_get_handle, "cuMemGetHandleForAddressRange");
    }
  });
  return a;
}

Error cuda_error(const CudaApi& a, int rc, std::string operation) {
  std::string text = a.get_error_string ? a.get_error_string(rc) : "error";
  return Error(ErrorCode::kSystem, std::move(operation),
               text + " (cudaError " + std::to_string(rc) + ")");
}

// Asks the driver whether `gpu` can export dma-bufs.
bool driver_supports_dmabuf(const CudaApi& a, int gpu) {
  if (!a.cu_device_get || !a.cu_device_get_attribute || !a.cu_mem_get_handle) return false;
  int dev = 0;
  if (a.cu_device_get(&dev, gpu) != 0) return false;
  int value = 0;
  return a.cu_device_get_attribute(&value, kAttrDmaBufSupported, dev) == 0 && value != 0;
}

} // namespace

std::string_view gpu_registration_name(GpuRegistration r) {
  return r == GpuRegistration::kDmaBuf ? "dma-buf" : "nvidia-peermem";
}

Result<GpuRegistration> choose_gpu_registration(const GpuDirectSupport& s, int gpu) {
  if (s.driver_dmabuf && s.verbs_dmabuf) return GpuRegistration::kDmaBuf;
  if (s.peermem_loaded) return GpuRegistration::kPeerMemory;
  std::string missing;
  if (!s.driver_dmabuf) {
    missing = "the NVIDIA driver does not export GPU " + std::to_string(gpu) + " memory as dma-buf";
  } else {
    missing = "libibverbs lacks ibv_reg_dmabuf_mr (rdma-core older than 34)";
  }
  return Error(ErrorCode::kUnsupported, "GPUDirect RDMA",
               missing + ", and the nvidia-peermem module is not loaded")
      .with_hint("load it (`modprobe nvidia-peermem`), or use a driver with dma-buf support "
                 "(open kernel modules, Linux 5.12 or later)");
}

bool nvidia_peermem_loaded(const SysfsReader& sysfs) {
  return sysfs.exists("module/nvidia_peermem");
}

Result<GpuBuffer> GpuBuffer::allocate(int gpu, std::size_t bytes) {
  const CudaApi& a = api();
  if (!a.runtime_error.empty()) {
    return Error(ErrorCode::kNotBuilt, "--gpu " + std::to_string(gpu),
                 "no CUDA runtime (" + a.runtime_error + ")")
        .with_hint("install the CUDA runtime or add its lib64 folder to LD_LIBRARY_PATH");
  }
  // device_count() and describe_device() say "no CUDA device" (exit 4) or name the range.
  FABRIC_TRY(cuda::describe_device(gpu).context("--gpu " + std::to_string(gpu)));
  if (int rc = a.set_device(gpu); rc != 0) return cuda_error(a, rc, "cudaSetDevice");
  GpuBuffer b;
  b.gpu_ = gpu;
  b.size_ = (bytes + kGpuPage - 1) / kGpuPage * kGpuPage;
  if (int rc = a.malloc(&b.base_, b.size_ + kGpuPage); rc != 0) {
    b.base_ = nullptr;
    return cuda_error(a, rc, "cudaMalloc")
        .with_context("allocating " + std::to_string(b.size_) + " bytes on GPU " +
                      std::to_string(gpu));
  }
  auto addr = reinterpret_cast<uintptr_t>(b.base_);
  b.aligned_ = reinterpret_cast<void*>((addr + kGpuPage - 1) / kGpuPage * kGpuPage);
  return b;
}

GpuBuffer::GpuBuffer(GpuBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), aligned_(std::exchange(other.aligned_, nullptr)),
      size_(std::exchange(other.size_, 0)), gpu_(std::exchange(other.gpu_, -1)) {}

GpuBuffer& GpuBuffer::operator=(GpuBuffer&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    aligned_ = std::exchange(other.aligned_, nullptr);
    size_ = std::exchange(other.size_, 0);
    gpu_ = std::exchange(other.gpu_, -1);
  }
  return *this;
}

GpuBuffer::~GpuBuffer() {
  release();
}

void GpuBuffer::release() {
  if (base_ != nullptr) api().free(base_);
  base_ = aligned_ = nullptr;
}

Result<void> GpuBuffer::fill(int byte) {
  const CudaApi& a = api();
  if (int rc = a.memset(aligned_, byte, size_); rc != 0) return cuda_error(a, rc, "cudaMemset");
  if (int rc = a.device_synchronize(); rc != 0) return cuda_error(a, rc, "cudaDeviceSynchronize");
  return Ok();
}

Result<verbs::MemoryRegion> GpuBuffer::register_memory(ibv_pd* pd, int access,
                                                       GpuRegistration& used,
                                                       const SysfsReader& sysfs) const {
  const CudaApi& a = api();
  GpuDirectSupport support;
  support.driver_dmabuf = driver_supports_dmabuf(a, gpu_);
  support.peermem_loaded = nvidia_peermem_loaded(sysfs);
  FABRIC_ASSIGN_OR_RETURN(used, choose_gpu_registration(support, gpu_));
  if (used == GpuRegistration::kPeerMemory) {
    return verbs::reg_mr(pd, aligned_, size_, access).context("registering GPU memory");
  }
  auto dmabuf = register_dmabuf(pd, access);
  if (dmabuf.ok() || !support.peermem_loaded) return dmabuf;
  // The GPU driver offers dma-buf, yet the NIC's kernel driver may still refuse it (an
  // older one): peer memory is the path it has always known.
  auto peer = verbs::reg_mr(pd, aligned_, size_, access);
  if (!peer.ok()) return std::move(dmabuf).error().with_context("registering GPU memory");
  used = GpuRegistration::kPeerMemory;
  return peer;
}

Result<verbs::MemoryRegion> GpuBuffer::register_dmabuf(ibv_pd* pd, int access) const {
  const CudaApi& a = api();
  int fd = -1;
  int rc = a.cu_mem_get_handle(&fd, reinterpret_cast<uintptr_t>(aligned_), size_,
                               kHandleTypeDmaBufFd, 0);
  if (rc != 0) {
    return Error(ErrorCode::kSystem, "cuMemGetHandleForAddressRange",
                 "CUresult " + std::to_string(rc));
  }
  UniqueFd dmabuf(fd);
  // The region's iova is the buffer's own address: the one the peer is told to write to.
  const auto address = reinterpret_cast<uintptr_t>(aligned_);
  return verbs::reg_dmabuf_mr(pd, 0, size_, address, dmabuf.get(), access)
      .context("GPU " + std::to_string(gpu_));
}

} // namespace fabric::probes
