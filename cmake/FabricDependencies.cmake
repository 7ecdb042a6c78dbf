# Every dependency is a Debian package (scripts/setup.sh installs them); NCCL and the
# CUDA runtime come from FABRIC_CUDA_ROOT when present. Each is exposed as an imported
# target so that component CMakeLists only name targets.

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(RapidJSON QUIET)
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)
add_library(fabric_rapidjson INTERFACE)
target_include_directories(fabric_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIR})
# RapidJSON's std::string API is what we use throughout.
target_compile_definitions(fabric_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)
add_library(fabric::rapidjson ALIAS fabric_rapidjson)

# libnl: shared by default; the static archives for an executable whose FABRIC_STATIC
# property is set (fabric-cni). Those archives must not meet the shared libnl that
# libibverbs loads, so a static executable never links verbs.
pkg_check_modules(LIBNL REQUIRED IMPORTED_TARGET libnl-3.0 libnl-route-3.0)
find_library(FABRIC_LIBNL_ROUTE_STATIC NAMES libnl-route-3.a)
find_library(FABRIC_LIBNL_STATIC NAMES libnl-3.a)
add_library(fabric_libnl INTERFACE)
target_link_libraries(fabric_libnl INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:FABRIC_STATIC>>,${FABRIC_LIBNL_ROUTE_STATIC};${FABRIC_LIBNL_STATIC},PkgConfig::LIBNL>")
target_include_directories(fabric_libnl SYSTEM INTERFACE ${LIBNL_INCLUDE_DIRS})
add_library(fabric::libnl ALIAS fabric_libnl)

set(FABRIC_HAVE_VERBS OFF)
if(WITH_VERBS)
  pkg_check_modules(VERBS REQUIRED IMPORTED_TARGET libibverbs librdmacm)
  pkg_check_modules(RDMACM REQUIRED IMPORTED_TARGET librdmacm)
  set(FABRIC_HAVE_VERBS ON)
endif()

set(FABRIC_HAVE_MPI OFF)
if(NOT WITH_MPI STREQUAL "OFF")
  if(WITH_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(FABRIC_HAVE_MPI ON)
    find_program(FABRIC_MPIEXEC_FOUND NAMES mpirun mpiexec HINTS ${MPI_HOME}/bin)
    # Open MPI derives its install prefix from the path it was started by; through the
    # /bin -> /usr/bin symlink on merged-/usr systems that prefix is "/", which it refuses.
    get_filename_component(FABRIC_MPIEXEC "${FABRIC_MPIEXEC_FOUND}" REALPATH)
  endif()
endif()

# NCCL is looked for only under FABRIC_CUDA_ROOT: the toolkit's own layout, not the
# system's, so that a stray libnccl elsewhere is never picked up by accident.
set(FABRIC_HAVE_NCCL OFF)
if(NOT WITH_NCCL STREQUAL "OFF")
  find_path(NCCL_INCLUDE_DIR nccl.h PATHS ${FABRIC_CUDA_ROOT}/include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY nccl PATHS ${FABRIC_CUDA_ROOT}/lib64 ${FABRIC_CUDA_ROOT}/lib
               NO_DEFAULT_PATH)
  find_path(CUDART_INCLUDE_DIR cuda_runtime_api.h PATHS ${FABRIC_CUDA_ROOT}/include
            NO_DEFAULT_PATH)
  find_library(CUDART_LIBRARY cudart PATHS ${FABRIC_CUDA_ROOT}/lib64 ${FABRIC_CUDA_ROOT}/lib
               NO_DEFAULT_PATH)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND CUDART_INCLUDE_DIR AND CUDART_LIBRARY)
    set(FABRIC_HAVE_NCCL ON)
    add_library(fabric_nccl INTERFACE)
    target_include_directories(fabric_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR} ${CUDART_INCLUDE_DIR})
    target_link_libraries(fabric_nccl INTERFACE ${NCCL_LIBRARY} ${CUDART_LIBRARY})
    add_library(fabric::nccl ALIAS fabric_nccl)
  elseif(WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "WITH_NCCL=ON but NCCL and the CUDA runtime were not found under "
                        "${FABRIC_CUDA_ROOT} (set FABRIC_CUDA_ROOT)")
  endif()
endif()
