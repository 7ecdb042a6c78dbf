// Scratch directories for the NCCL profiler tests: a temporary folder (tests/support's), and
// a /proc look-alike with just the files the reader consults.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "tests/support/temp_dir.h"

namespace fabric::nccl_profiler::testing {

using fabric::testing::TempDir;

inline void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// /proc as the reader sees it: self/ns/pid, and per process stat, status, ns/pid, cgroup.
class FakeProc {
public:
  FakeProc(const std::string& root, uint64_t own_namespace) : root_(root) {
    link_namespace(root_ + "/self", own_namespace);
  }

  // A process: `pid` here, `inner_pid` in its own namespace `ns`.
  // `uid` is the one it creates files as (this test's own unless said).
  void add(int64_t pid, uint64_t ns, int64_t inner_pid, uint64_t start_ticks,
           const std::string& cgroup = "0::/user.slice\n", uint32_t uid = ::geteuid()) {
    std::string dir = root_ + "/" + std::to_string(pid);
    write_text(dir + "/stat", std::to_string(pid) +
                                  " (python3) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 9 0 " +
                                  std::to_string(start_ticks) + " 1048576 2048\n");
    std::string nspid = std::to_string(pid);
    if (inner_pid != pid) nspid += "\t" + std::to_string(inner_pid);
    std::string uids = std::to_string(uid);
    write_text(dir + "/status", "Name:\tpython3\nPPid:\t1\nUid:\t" + uids + "\t" + uids + "\t" +
                                    uids + "\t" + uids + "\nNSpid:\t" + nspid + "\n");
    write_text(dir + "/cgroup", cgroup);
    link_namespace(dir, ns);
  }
  // As a reader without CAP_SYS_PTRACE sees another container's process: no ns/pid link.
  void hide_namespace(int64_t pid) {
    std::filesystem::remove(root_ + "/" + std::to_string(pid) + "/ns/pid");
  }
  void remove(int64_t pid) { std::filesystem::remove_all(root_ + "/" + std::to_string(pid)); }

private:
  static void link_namespace(const std::string& dir, uint64_t ns) {
    std::filesystem::create_directories(dir + "/ns");
    std::filesystem::remove(dir + "/ns/pid");
    std::filesystem::create_symlink("pid:[" + std::to_string(ns) + "]", dir + "/ns/pid");
  }
  std::string root_;
};

} // namespace fabric::nccl_profiler::testing
