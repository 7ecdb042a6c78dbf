# Writes a C++ source defining fabric::nccltest::check_kernels_image() over the bytes of
# INPUT, or over no bytes when INPUT is empty (a build without nvcc):
#   cmake -DINPUT=<fatbin or empty> -DOUTPUT=<file.cpp> -P embed_file.cmake
if(INPUT)
  file(READ "${INPUT}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(([^,]*,){24})" "\\1\n" bytes "${bytes}")
  set(body "namespace {
// Aligned as the driver wants a fatbin image.
alignas(64) const unsigned char kImage[] = {
${bytes}
};
} // namespace

std::span<const unsigned char> check_kernels_image() { return {kImage, sizeof(kImage)}; }")
else()
  set(body "std::span<const unsigned char> check_kernels_image() { return {}; }")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated at build time from nccltest/check_kernels.cu; do not edit.
#include \"nccltest/check_plan.h\"

namespace fabric::nccltest {

${body}

} // namespace fabric::nccltest
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
