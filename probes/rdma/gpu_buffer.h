// Test buffers in CUDA device memory (--gpu N), registered for GPUDirect RDMA.
//
// The CUDA runtime and driver are loaded with dlopen, like common/cuda_runtime.h, so one
// binary runs on GPU and non-GPU nodes. Registration prefers dma-buf (the driver exports
// the allocation as a dma-buf fd, cuMemGetHandleForAddressRange, and the RDMA device maps
// it, ibv_reg_dmabuf_mr): it needs no out-of-tree module. Without dma-buf, a plain
// ibv_reg_mr on the device pointer works when the nvidia-peermem module is loaded (the
// kernel's peer-memory client resolves the GPU pages). With neither, the error says which
// piece is missing.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"
#include "common/sysfs.h"
#include "common/verbs_handles.h"

namespace fabric::probes {

enum class GpuRegistration { kDmaBuf, kPeerMemory };
std::string_view gpu_registration_name(GpuRegistration r);

// What the node offers for GPUDirect RDMA.
struct GpuDirectSupport {
  bool driver_dmabuf = false;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  bool verbs_dmabuf = true;    // libibverbs has ibv_reg_dmabuf_mr (rdma-core >= 34)
  bool peermem_loaded = false; // /sys/module/nvidia_peermem
};

// dma-buf where both the driver and verbs can, else peer memory where nvidia-peermem is
// loaded, else a kUnsupported error (exit 4) naming what is missing.
Result<GpuRegistration> choose_gpu_registration(const GpuDirectSupport& support, int gpu);

// Whether the nvidia-peermem module is loaded (its /sys/module entry).
bool nvidia_peermem_loaded(const SysfsReader& sysfs);

// Device memory on one GPU, freed on destruction.
class GpuBuffer {
public:
  // Errors (all exit 4): kNotBuilt "no CUDA runtime" when libcudart cannot be loaded,
  // kUnsupported "no CUDA device", kNotFound for an index beyond the GPUs present.
  static Result<GpuBuffer> allocate(int gpu, std::size_t bytes);

  GpuBuffer(GpuBuffer&& other) noexcept;
  GpuBuffer& operator=(GpuBuffer&& other) noexcept;
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  ~GpuBuffer();

  void* data() const { return aligned_; }
  std::size_t size() const { return size_; }
  int gpu() const { return gpu_; }

  // Fills the buffer with `byte` (cudaMemset).
  Result<void> fill(int byte);

  // Registers the buffer with `pd` by the path choose_gpu_registration() picks; when
  // dma-buf is picked but refused and nvidia-peermem is loaded, by peer memory instead.
  // `used` says which path registered it.
  Result<verbs::MemoryRegion> register_memory(ibv_pd* pd, int access, GpuRegistration& used,
                                              const SysfsReader& sysfs = SysfsReader()) const;

private:
  GpuBuffer() = default;
  void release();
  Result<verbs::MemoryRegion> register_dmabuf(ibv_pd* pd, int access) const;

  void* base_ = nullptr;    // what cudaMalloc returned
  void* aligned_ = nullptr; // base_ rounded up to the GPU page size
  std::size_t size_ = 0;
  int gpu_ = -1;
};

} // namespace fabric::probes
