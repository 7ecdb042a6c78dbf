// spdlog's implementation, compiled once for every fabrickit binary.
//
// Header-only spdlog instantiates its registry, pattern formatter and sinks in every
// translation unit that logs, which tripled those units' compile time. With
// SPDLOG_COMPILED_LIB (set by the fabric::logging target) the headers only declare them and
// this file defines them, as spdlog's own src/ does; the binaries still carry spdlog
// statically and need no libspdlog on the node (fabric-cni is copied onto hosts).
//
// Only the sinks fabrickit uses are instantiated here: the colour stderr sink (every tool)
// and the plain file sink (fabric-cni's logFile). A new sink is a link error until it is
// added below.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_compiled.cpp is built with SPDLOG_COMPILED_LIB (the fabric::logging target)"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/file_helper-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/basic_file_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

template class SPDLOG_API spdlog::sinks::base_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::base_sink<spdlog::details::null_mutex>;

template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template SPDLOG_API std::shared_ptr<spdlog::logger>
spdlog::stderr_color_mt<spdlog::synchronous_factory>(const std::string& logger_name,
                                                     color_mode mode);

template class SPDLOG_API spdlog::sinks::basic_file_sink<std::mutex>;
