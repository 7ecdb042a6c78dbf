// NCCL's profiler ABI versions 1 to 3, declared from our reading of NCCL's headers
// (ext-profiler/example/nccl/profiler_v1.h, profiler_v2.h, profiler_v3.h and profiler.h of
// NVIDIA/nccl) rather than copied, like profiler_abi.h for v4 to v6. Every struct has
// NCCL's full layout, which tests/unit/nccl_profiler/abi_layout_test.cpp pins.
//
// Which NCCL looks for which symbol (src/plugin/profiler.cc):
//   ncclProfiler_v1  NCCL 2.23 (v2.23.4-1 introduced the profiler plugin).
//   ncclProfiler_v2  NCCL 2.24.
//   ncclProfiler_v3  NCCL 2.25 and 2.26 (PyTorch 2.7 ships 2.26).
//
// What they lack against v4: init gets no communicator (its hash and this process's rank
// come with each Coll and P2p event; its rank count never does), descriptors carry no
// channel count, and there is no kernel-channel event with GPU timestamps (v3's carries a
// channel id only). So on these versions the plugin counts operations and bytes, and
// times nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "exporters/nccl_profiler/profiler_abi.h"

extern "C" {

// v1 names the collective and the type by NCCL's enums, not by strings:
// ncclFunc_t (src/include/device.h of 2.23) and ncclDataType_t (nccl.h).
enum ncclLegacyFunc : uint8_t {
  ncclLegacyFuncBroadcast = 0,
  ncclLegacyFuncReduce = 1,
  ncclLegacyFuncAllGather = 2,
  ncclLegacyFuncReduceScatter = 3,
  ncclLegacyFuncAllReduce = 4,
  ncclLegacyFuncSendRecv = 5,
  ncclLegacyFuncSend = 6,
  ncclLegacyFuncRecv = 7,
};

struct ncclProfilerCollDescr_v1 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  uint8_t func; // ncclFunc_t
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  uint8_t datatype; // ncclDataType_t
  uint32_t op;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  uint8_t algo;
  uint8_t proto;
  int isCollnet;
  int isNvls;
};
struct ncclProfilerP2pDescr_v1 {
  const char* name;
  uint64_t commHash;
  uint8_t func; // ncclFunc_t
  void* buff;
  uint8_t datatype; // ncclDataType_t
  size_t count;
  int peer;
};
struct ncclProfilerCollDescr_v2 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct ncclProfilerCollDescr_v3 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
// The same in v2 and v3.
struct ncclProfilerP2pDescr_v2 {
  const char* name;
  uint64_t commHash;
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
};

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank; // this process's rank in the event's communicator
  union {
    ncclProfilerCollDescr_v1 coll;
    ncclProfilerP2pDescr_v1 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v1_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v2 coll;
    ncclProfilerP2pDescr_v2 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v2_t;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v3 coll;
    ncclProfilerP2pDescr_v2 p2p;
    ncclProfilerProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    ncclProfilerNetPluginDescr netPlugin;
  };
} ncclProfilerEventDescr_v3_t;

// The same union in v1 to v3; this plugin reads none of it.
typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

} // extern "C"

// One table layout for the three: only the descriptor type differs.
template <typename Descr> struct ncclLegacyProfiler {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v1_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};
typedef ncclLegacyProfiler<ncclProfilerEventDescr_v1_t> ncclProfiler_v1_t;
typedef ncclLegacyProfiler<ncclProfilerEventDescr_v2_t> ncclProfiler_v2_t;
typedef ncclLegacyProfiler<ncclProfilerEventDescr_v3_t> ncclProfiler_v3_t;
