# build_info: version, git revision and the optional features each binary was built with.
# The git revision is refreshed on every build (not only at configure time) by a small
# script that rewrites the generated source only when the revision changed, so an
# unchanged tree does not relink.

set(FABRIC_BUILD_INFO_CPP ${CMAKE_BINARY_DIR}/generated/build_info_values.cpp)
add_custom_target(fabric_build_info_gen
  COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${FABRIC_BUILD_INFO_CPP}
    -DVERSION=${PROJECT_VERSION}
    -DHAVE_VERBS=${FABRIC_HAVE_VERBS}
    -DHAVE_NCCL=${FABRIC_HAVE_NCCL}
    -DHAVE_MPI=${FABRIC_HAVE_MPI}
    -DSANITIZE=${FABRIC_SANITIZE}
    -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
    -P ${CMAKE_SOURCE_DIR}/cmake/write_build_info.cmake
  BYPRODUCTS ${FABRIC_BUILD_INFO_CPP}
  COMMENT "Refreshing build info"
  VERBATIM)
