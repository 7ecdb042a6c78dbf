// NCCL's profiler plugin ABI, declared from our reading of NCCL's headers rather than
// copied: src/include/plugin/nccl_profiler.h and src/include/plugin/profiler/profiler_v4.h,
// profiler_v5.h and profiler_v6.h of NVIDIA/nccl (the same definitions as
// ext-profiler/example/nccl/). Only what this plugin reads is named; every struct still
// has NCCL's full layout, which tests/unit/nccl_profiler/abi_layout_test.cpp pins with
// sizeof/offsetof checks.
//
// Which NCCL looks for which symbol (src/plugin/profiler.cc, ncclProfilerPluginLoad):
//   ncclProfiler_v4  NCCL 2.27 (v2.27.3-1 introduced it); 2.28 adapts it from v5 and
//                    2.29/2.30 too, but both prefer a newer symbol when one is there.
//   ncclProfiler_v5  NCCL 2.28 (v2.28.3-1 introduced it; v2.28.9-1 is installed here).
//   ncclProfiler_v6  NCCL 2.29 and 2.30 (v2.29.2-1 introduced it; still current in 2.30.7).
// NCCL tries the newest version it knows first, so each release takes its own symbol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

extern "C" {

// nccl.h and ext-profiler/example/nccl/err.h: plugins may only return ncclSuccess from
// anything but init; an error from init makes NCCL continue without the plugin.
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
} ncclResult_t;

// ext-profiler/example/nccl/common.h: the logger NCCL hands to init.
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;
enum { NCCL_INIT = 1 }; // ncclDebugLogSubSys: the only subsystem this plugin logs under
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);

// nccl_profiler.h: event types, also the bits of the activation mask.
enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),      // v5
  ncclProfileCollApi = (1 << 9),       // v5
  ncclProfileP2pApi = (1 << 10),       // v5
  ncclProfileKernelLaunch = (1 << 11), // v5
  ncclProfileCeColl = (1 << 12),       // v6
  ncclProfileCeSync = (1 << 13),       // v6
  ncclProfileCeBatch = (1 << 14),      // v6
};

// nccl_profiler.h: one int-sized enum for every version (values 0 to 30); only the kernel
// channel's stop is used here.
enum ncclProfilerEventState_t : int {
  ncclProfilerKernelChStop = 22,
};

// The union members this plugin reads, identical in v4, v5 and v6 up to the fields that
// v5 appended (parentGroup).
struct ncclProfilerCollDescr_v4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct ncclProfilerCollDescr_v5 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
};
struct ncclProfilerP2pDescr_v4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct ncclProfilerP2pDescr_v5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct ncclProfilerKernelChDescr {
  uint8_t channelId;
  uint64_t pTimer; // the GPU's globaltimer (ns) when the channel started the work
};
// The members this plugin never reads, kept for the union's size and alignment.
struct ncclProfilerProxyOpDescr {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct ncclProfilerNetPluginDescr {
  int64_t id;
  void* data;
};
struct ncclProfilerCollApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};
struct ncclProfilerP2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};
struct ncclProfilerCeCollDescr {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  const char* syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void* stream;
};

// profiler_v4.h: the type is a uint8_t there (uint64_t from v5 on).
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v4 coll;
    ncclProfilerP2pDescr_v4 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    ncclProfilerKernelChDescr kernelCh;
    ncclProfilerNetPluginDescr netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

// profiler_v5.h
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    ncclProfilerCollApiDescr collApi;
    ncclProfilerP2pApiDescr p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    ncclProfilerCollDescr_v5 coll;
    ncclProfilerP2pDescr_v5 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    ncclProfilerKernelChDescr kernelCh;
    ncclProfilerNetPluginDescr netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

// profiler_v6.h: v5's members plus the copy-engine collectives of 2.29.
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    ncclProfilerCollApiDescr collApi;
    ncclProfilerP2pApiDescr p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    ncclProfilerCollDescr_v5 coll;
    ncclProfilerP2pDescr_v5 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    ncclProfilerKernelChDescr kernelCh;
    ncclProfilerNetPluginDescr netPlugin;
    ncclProfilerCeCollDescr ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

// The same union in v4, v5 and v6 (v6 typedefs it to v5's).
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer; // the GPU's globaltimer (ns) when the channel finished the work
  } kernelCh;
} ncclProfilerEventStateArgs_t;

typedef struct {
  const char* name;
  // v4 passes the communicator's name before its hash.
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

} // extern "C"
