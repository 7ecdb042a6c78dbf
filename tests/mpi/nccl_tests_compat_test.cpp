// mpi tier: nccl-tests' command lines run unchanged through the installed program names
// (all_reduce_perf, ...: links to fabric-nccltest) under a real mpirun, and the
// output held against nccl-tests 2.19.6's own format strings (src/util.cu: writeDeviceReport,
// parseRankInfo, writeResultHeader, writeBenchmarkLinePreamble, writeBenchmarkLineBody,
// writeResultFooter), copied below with the values nccl-tests passes them: every '#' line
// nccl-tests prints is printed the same, and every row is the same bytes once rebuilt from
// its fields with those formats. Most runs scale the sizes down (-e) over 4 ranks; the
// README's lines run unchanged (TheReadme*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "nccltest/cgroup_memory.h"
#include "tests/mpi/loopback_mpi_environment.h"
#include "tests/unit/nccltest/nccl_tests_parsers.h"

namespace fabric::nccltest {
namespace {

const auto* const kLoopbackMpi =
    ::testing::AddGlobalTestEnvironment(new fabric::testing::LoopbackMpiEnvironment);

struct MpiRun {
  int status = -1;
  std::string out, err;
};

// One of the installed names: the links beside the built fabric-nccltest.
std::string program_path(const std::string& program) {
  const std::string binary = FABRIC_NCCLTEST_BINARY;
  return binary.substr(0, binary.rfind('/') + 1) + program;
}

// `program` is one of the installed names (program_path).
MpiRun mpirun(const std::string& program, std::vector<std::string> args,
              std::map<std::string, std::string> env = {}, int ranks = 4) {
  std::vector<std::string> argv = {FABRIC_MPIEXEC, "-np", std::to_string(ranks), "--oversubscribe"};
  for (const auto& [k, v] : env) {
    ::setenv(k.c_str(), v.c_str(), 1);
    argv.insert(argv.end(), {"-x", k});
  }
  argv.push_back(program_path(program));
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(120);
  auto r = run_subprocess(argv, options);
  for (const auto& [k, v] : env)
    ::unsetenv(k.c_str());
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return {};
  return {r->exit_status, r->stdout_text, r->stderr_text};
}

__attribute__((format(printf, 1, 2))) std::string c_format(const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return text;
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// nccl-tests' table header (writeResultHeader without -I).
std::vector<std::string> table_header(bool cputime, bool timestamps) {
  const char* time = cputime ? "cputime" : "time";
  const int pad = timestamps ? 19 : 0;
  return {c_format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                   "in-place          \n",
                   "", "", "", "", ""),
          c_format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n",
                   "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", time,
                   "algbw", "busbw", "#wrong", pad, timestamps ? "timestamp" : ""),
          c_format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n",
                   "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                   "(GB/s)", "(GB/s)", "", pad, timestamps ? "%Y-%m-%d %H:%M:%S" : "")};
}

struct Row {
  std::string line;
  std::vector<std::string> fields;
};

// The table's rows: the lines between the units line and the first '#' line after it.
std::vector<Row> rows_of(const std::vector<std::string>& lines) {
  std::vector<Row> rows;
  bool in_table = false;
  for (const std::string& line : lines) {
    if (line.rfind("#        (B)", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line[0] == '#') break;
    Row row{line, {}};
    std::istringstream in(line);
    std::string field;
    while (in >> field)
      row.fields.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

// A row rebuilt from its fields with writeBenchmarkLinePreamble's and
// writeBenchmarkLineBody's formats (a timestamp, -S, with writeTimestamp's).
std::string rebuilt(const Row& row) {
  const auto& f = row.fields;
  if (f.size() < 13) return "(" + std::to_string(f.size()) + " fields)";
  std::string out = c_format("%12li  %12li  %8s  %6s  %6s", std::stol(f[0]), std::stol(f[1]),
                             f[2].c_str(), f[3].c_str(), c_format("%6i", std::stoi(f[4])).c_str());
  for (std::size_t p = 5; p <= 9; p += 4) {
    if (f[p + 3] == "N/A") {
      out += c_format("  %7s  %6s  %6s    N/A", f[p].c_str(), f[p + 1].c_str(), f[p + 2].c_str());
    } else {
      out += c_format("  %7s  %6s  %6s  %6g", f[p].c_str(), f[p + 1].c_str(), f[p + 2].c_str(),
                      std::stod(f[p + 3]));
    }
  }
  if (f.size() == 15) out += c_format("%21s", (f[13] + " " + f[14]).c_str());
  return out + "\n";
}

// What every run prints as nccl-tests does: the header lines, each device line as
// nccl-tests' parseRankInfo reads it, the table header, rows that rebuild to the same
// bytes, and the footer.
void expect_nccl_tests_layout(const MpiRun& r, const std::string& program, bool cputime = false,
                              bool timestamps = false, int ranks = 4) {
  const std::vector<std::string> lines = testing::lines_of(r.out);
  EXPECT_TRUE(has_line(lines, "# Collective test starting: " + program + "\n")) << r.out;
  EXPECT_TRUE(has_line(lines, "# Using devices\n"));
  int devices = 0;
  for (const std::string& line : lines) {
    int rank = -1, group = -1, pid = 0, device = 0, end = 0;
    char host[1025] = {}, hex[129] = {}, info[1025] = {};
    if (line.rfind("#  Rank ", 0) != 0) continue;
    std::sscanf(line.c_str(),
                "#  Rank %d Group %d Pid %d on %1024s device %d [%128[^]]] %1024[^\n]\n%n", &rank,
                &group, &pid, host, &device, hex, info, &end);
    EXPECT_EQ(end, static_cast<int>(line.size())) << line;
    EXPECT_EQ(rank, devices) << line;
    EXPECT_EQ(group, 0);
    EXPECT_GT(pid, 0);
    ++devices;
  }
  EXPECT_EQ(devices, ranks);
  for (const std::string& line : table_header(cputime, timestamps))
    EXPECT_TRUE(has_line(lines, line)) << "missing: " << line << "in:\n" << r.out;
  const std::vector<Row> rows = rows_of(lines);
  EXPECT_FALSE(rows.empty()) << r.out;
  for (const Row& row : rows)
    EXPECT_EQ(rebuilt(row), row.line);
  bool footer = false;
  for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
    if (lines[i].rfind("# Out of bounds values : ", 0) != 0) continue;
    footer = true;
    int wrong = -1;
    char verdict[16] = {};
    ASSERT_EQ(std::sscanf(lines[i].c_str(), "# Out of bounds values : %d %15s", &wrong, verdict),
              2);
    EXPECT_EQ(lines[i], c_format("# %-20s : %d %s\n", "Out of bounds values", wrong, verdict));
    double avg = -1;
    ASSERT_EQ(std::sscanf(lines[i + 1].c_str(), "# Avg bus bandwidth    : %lf", &avg), 1);
    EXPECT_EQ(lines[i + 1].rfind(c_format("# %-20s : %g ", "Avg bus bandwidth", avg), 0), 0u)
        << lines[i + 1];
  }
  EXPECT_TRUE(footer) << r.out;
  EXPECT_TRUE(has_line(lines, "# Collective test concluded: " + program + "\n"));
}

// nccl-tests' README lines run unchanged below, but for `mpirun -np 64 -N 8`, which needs
// eight nodes: `./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8` alone
// (TheReadmeSingleNodeLineRunsAsOneRank) and `-b 8 -e 8G -f 2 -g 1` under mpirun -np 2 in a
// memory cgroup (TheReadmeMpiLineFitsTheMemoryCgroup). Here the same layout over 4 ranks
// and -e 64K, where the rows' count is known.
TEST(NcclTestsCompat, TheReadmeRunPrintsNcclTestsLayout) {
  MpiRun r = mpirun("all_reduce_perf", {"-b", "8", "-e", "64K", "-f", "2", "-g", "1"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expect_nccl_tests_layout(r, "all_reduce_perf");
  EXPECT_TRUE(has_line(testing::lines_of(r.out),
                       c_format("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) "
                                "warmup iters: %d iters: %d agg iters: %d validation: %d graph: "
                                "%d unalign: %d\n",
                                1, 1, 8L, 65536L, 2L, "factor", 1, 20, 1, 1, 0, 0)))
      << r.out;
  EXPECT_EQ(rows_of(testing::lines_of(r.out)).size(), 14u); // 8 B to 64 KiB
}

// nccl-tests' README, its one-node line unchanged and without mpirun: the mpi backend runs
// it as one rank on host memory, says in one line that -g 8 means nothing there, and prints
// nccl-tests' layout for every size from 8 B to 128 MiB.
TEST(NcclTestsCompat, TheReadmeSingleNodeLineRunsAsOneRank) {
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(120);
  auto run = run_subprocess(
      {program_path("all_reduce_perf"), "-b", "8", "-e", "128M", "-f", "2", "-g", "8"}, options);
  ASSERT_TRUE(run.ok()) << run.error().message();
  MpiRun r{run->exit_status, run->stdout_text, run->stderr_text};
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expect_nccl_tests_layout(r, "all_reduce_perf", false, false, /*ranks=*/1);
  const std::vector<std::string> lines = testing::lines_of(r.out);
  EXPECT_TRUE(has_line(lines, "# -g 8 -t 1 ignored: the mpi backend runs one rank per process on "
                              "host memory (start more ranks with mpirun -np)\n"))
      << r.out;
  const std::vector<Row> rows = rows_of(lines);
  ASSERT_EQ(rows.size(), 25u) << r.out; // 8 B to 128 MiB
  EXPECT_EQ(rows.front().fields[0], "8");
  EXPECT_EQ(rows.back().fields[0], "134217728");
  for (const Row& row : rows) {
    EXPECT_EQ(row.fields[8], "0") << row.line;
    EXPECT_EQ(row.fields[12], "0") << row.line;
  }
}

// A memory cgroup made for one test as a child of this process's own (v1's memory
// controller, or v2 where the machine has it), with a limit, removed when done.
class MemoryCgroup {
public:
  // An empty reason: made; otherwise why not.
  std::string make(uint64_t limit) {
    auto self = read_file("/proc/self/cgroup");
    auto mountinfo = read_file("/proc/self/mountinfo");
    if (!self.ok() || !mountinfo.ok()) return "/proc/self/cgroup or mountinfo unreadable";
    const SelfCgroups where = parse_self_cgroups(*self);
    const CgroupMounts mounts = parse_cgroup_mounts(*mountinfo);
    const std::string name = "fabric_nccltest_" + std::to_string(::getpid());
    std::string reasons;
    if (where.v1_memory && mounts.v1_memory) {
      v1_ = true;
      if (try_make(cgroup_directories(*mounts.v1_memory, *where.v1_memory), name,
                   "memory.limit_in_bytes", limit, reasons))
        return "";
    }
    if (where.v2 && mounts.v2) {
      v1_ = false;
      if (try_make(cgroup_directories(*mounts.v2, *where.v2), name, "memory.max", limit, reasons))
        return "";
    }
    return reasons.empty() ? "no memory cgroup hierarchy is mounted" : reasons;
  }
  ~MemoryCgroup() {
    if (dir_.empty()) return;
    // The job's processes have exited when mpirun returns, but the kernel may still be
    // moving their last pages out: wait (bounded) until the cgroup can go.
    for (int i = 0; i < 500 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i)
      ::usleep(10000);
  }
  const std::string& dir() const { return dir_; }
  // The most the cgroup held: v1's memory.max_usage_in_bytes, v2's memory.peak (kernels
  // from 5.19); nullopt where the kernel keeps none.
  std::optional<uint64_t> peak() const {
    auto text = read_file(dir_ + (v1_ ? "/memory.max_usage_in_bytes" : "/memory.peak"));
    if (!text.ok()) return std::nullopt;
    return parse_cgroup_usage(*text);
  }

private:
  static bool write_text(const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
  }
  bool try_make(const std::vector<std::string>& parents, const std::string& name,
                const char* limit_file, uint64_t limit, std::string& reasons) {
    for (const std::string& parent : parents) {
      const std::string dir = parent + "/" + name;
      if (::mkdir(dir.c_str(), 0755) != 0) {
        reasons += "mkdir " + dir + ": " + std::strerror(errno) + "; ";
        continue;
      }
      // v2 gives a child memory files only where the parent delegates the controller.
      if (write_text(dir + "/" + limit_file, std::to_string(limit))) {
        dir_ = dir;
        return true;
      }
      reasons += std::string("no ") + limit_file + " to write in " + dir + "; ";
      ::rmdir(dir.c_str());
      return false;
    }
    return false;
  }
  std::string dir_;
  bool v1_ = true;
};

// nccl-tests' README across nodes, `all_reduce_perf -b 8 -e 8G -f 2 -g 1`, unchanged under
// mpirun -np 2 in a memory cgroup limited to 640 MiB, as an MPIJob worker's pod would be:
// -e is reduced to what fits beside MPI's temporary and the reserve, with nccl-tests' line,
// and no rank is killed. (Planned from MemAvailable alone, the run outgrows the cgroup and a
// rank is OOM-killed.) 640 MiB leaves about 16 MiB as the largest size, a few seconds' run.
TEST(NcclTestsCompat, TheReadmeMpiLineFitsTheMemoryCgroup) {
  constexpr uint64_t kLimit = uint64_t{640} << 20;
  MemoryCgroup cgroup;
  if (std::string why = cgroup.make(kLimit); !why.empty())
    GTEST_SKIP() << "no memory cgroup can be made here: " << why;
  const std::string program = program_path("all_reduce_perf");
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(120);
  auto run = run_subprocess(
      {"/bin/sh", "-c", "echo $$ > \"$1/cgroup.procs\" && shift && exec \"$@\"", "sh", cgroup.dir(),
       FABRIC_MPIEXEC, "-np", "2", program, "-b", "8", "-e", "8G", "-f", "2", "-g", "1"},
      options);
  ASSERT_TRUE(run.ok()) << run.error().message();
  ASSERT_EQ(run->exit_status, 0) << run->stdout_text << run->stderr_text;
  const std::vector<std::string> lines = testing::lines_of(run->stdout_text);
  long long reduced = -1;
  for (const std::string& line : lines) {
    long long n = -1;
    if (std::sscanf(line.c_str(), "# Reducing maxBytes to %lld due to memory limitation", &n) ==
            1 &&
        line == c_format("# Reducing maxBytes to %lld due to memory limitation\n", n))
      reduced = n;
  }
  ASSERT_GT(reduced, 0) << run->stdout_text;
  // Each rank's share of the limit holds three buffers and the reserve.
  EXPECT_LE(3 * static_cast<uint64_t>(reduced) + 256 * (uint64_t{1} << 20), kLimit / 2);
  bool header = false;
  for (const std::string& line : lines)
    header = header || line.rfind(c_format("# nThread 1 nGpus 1 minBytes 8 maxBytes %lld step: "
                                           "2(factor) ",
                                           reduced),
                                  0) == 0;
  EXPECT_TRUE(header) << run->stdout_text;
  const std::vector<Row> rows = rows_of(lines);
  ASSERT_FALSE(rows.empty()) << run->stdout_text;
  EXPECT_EQ(rows.front().fields[0], "8");
  for (const Row& row : rows) {
    EXPECT_LE(std::stoll(row.fields[0]), reduced) << row.line;
    EXPECT_EQ(row.fields[8], "0") << row.line;
    EXPECT_EQ(row.fields[12], "0") << row.line;
  }
  EXPECT_GT(2 * std::stoll(rows.back().fields[0]), reduced); // the last power of 2 that fits
  const std::optional<uint64_t> peak = cgroup.peak();
  if (peak) {
    EXPECT_LT(*peak, kLimit);
  }
}

// The GPU check's reference run of NVIDIA's all_reduce_perf (scripts/gpu_check.sh), and
// -d all -o all in nccl-tests' order: types outer, operations inner, as its RunTest loops.
TEST(NcclTestsCompat, EveryTypeAndOpInNcclTestsOrder) {
  MpiRun r = mpirun("all_reduce_perf", {"-g", "1", "-b", "8", "-e", "64", "-f", "8", "-n", "2",
                                        "-w", "5", "-c", "1", "-d", "all", "-o", "all"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expect_nccl_tests_layout(r, "all_reduce_perf");
  // nccl-tests' test_typenames and test_opnames, less what MPI has no type or operation for.
  std::vector<std::string> expected;
  for (const char* type :
       {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float", "double"}) {
    for (const char* op : {"sum", "prod", "max", "min"})
      for (int size = 0; size < 2; ++size)
        expected.push_back(std::string(type) + " " + op);
  }
  std::vector<std::string> got;
  for (const Row& row : rows_of(testing::lines_of(r.out))) {
    got.push_back(row.fields[2] + " " + row.fields[3]);
    EXPECT_EQ(row.fields[8], "0") << row.line;
    EXPECT_EQ(row.fields[12], "0") << row.line;
  }
  EXPECT_EQ(got, expected);
}

// Each installed name runs its collective: nccl-tests' redop and root columns per program
// (none and -1 where the collective has none), broadcast with every root (-r -1) in turn.
TEST(NcclTestsCompat, EveryProgramNameRunsItsCollective) {
  struct Expect {
    const char* program;
    const char* redop;
    std::vector<int> roots;
  };
  for (const Expect& e :
       {Expect{"all_gather_perf", "none", {-1}}, Expect{"reduce_scatter_perf", "sum", {-1}},
        Expect{"alltoall_perf", "none", {-1}}, Expect{"sendrecv_perf", "sum", {-1}},
        Expect{"reduce_perf", "sum", {2}}, Expect{"broadcast_perf", "none", {0, 1, 2, 3}}}) {
    SCOPED_TRACE(e.program);
    const std::string root = std::string(e.program) == "broadcast_perf" ? "-1" : "2";
    MpiRun r = mpirun(e.program, {"-b", "1K", "-e", "1K", "-n", "2", "-r", root});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    expect_nccl_tests_layout(r, e.program);
    std::vector<int> roots;
    for (const Row& row : rows_of(testing::lines_of(r.out))) {
      EXPECT_EQ(row.fields[3], e.redop);
      roots.push_back(std::stoi(row.fields[4]));
    }
    EXPECT_EQ(roots, e.roots);
  }
}

// -N, -z 3, -C, -S and -u as nccl-tests prints them, and NCCL_TESTS_MIN_BW's verdict.
TEST(NcclTestsCompat, CyclesBlockingCputimeTimestampsUnalignAndMinBw) {
  MpiRun r = mpirun("all_reduce_perf",
                    {"-b", "8", "-e", "1K", "-f", "32", "-N", "2", "-z", "3", "-C", "1", "-S", "1",
                     "-u", "1", "-n", "3"},
                    {{"NCCL_TESTS_MIN_BW", "1000000"}});
  EXPECT_EQ(r.status, 3) << r.out << r.err; // no host reaches 1 PB/s
  expect_nccl_tests_layout(r, "all_reduce_perf", /*cputime=*/true, /*timestamps=*/true);
  const std::vector<std::string> lines = testing::lines_of(r.out);
  EXPECT_TRUE(has_line(lines, "# Blocking Enabled: wait and barrier after each outer iteration "
                              "(-n); time excludes barrier \n"))
      << r.out;
  bool unalign = false;
  for (const std::string& line : lines)
    unalign = unalign || (line.rfind("# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 ", 0) == 0 &&
                          line.ends_with(" unalign: 1\n"));
  EXPECT_TRUE(unalign) << r.out;
  std::vector<std::string> sizes;
  for (const Row& row : rows_of(lines)) {
    sizes.push_back(row.fields[0]);
    EXPECT_EQ(row.fields.size(), 15u) << row.line; // the timestamp's date and time
  }
  EXPECT_EQ(sizes, (std::vector<std::string>{"8", "256", "8", "256"})); // two cycles
  bool failed = false;
  for (const std::string& line : lines)
    failed = failed || (line.rfind("# Avg bus bandwidth    : ", 0) == 0 &&
                        line.find(" FAILED\n") != std::string::npos);
  EXPECT_TRUE(failed) << r.out;
}

// -I 1 -K 1 on 2 ranks: writeResultHeader's -I lines, and each row the 13 fields plus
// writePerIterReport's four after each placement's #wrong, in its widths; the summaries
// ordered as statistics are (not timed: any values will do). -J carries every iteration,
// each process's too, under nccl-tests' keys.
TEST(NcclTestsCompat, PerIterationColumnsFollowEachPlacement) {
  const std::string json =
      ::testing::TempDir() + "per_iter_" + std::to_string(::getpid()) + ".json";
  MpiRun r = mpirun(
      "all_reduce_perf",
      {"-b", "8", "-e", "64K", "-f", "2", "-I", "1", "-K", "1", "-c", "0", "-J", json}, {}, 2);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::vector<std::string> lines = testing::lines_of(r.out);
  const std::string header[] = {
      c_format("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)        "
               "                        in-place (+ per-iteration)\n",
               "", "", "", "", ""),
      c_format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
               "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
               "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
               "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min",
               "i_max", "i_p99", "i_cv%", 0, ""),
      c_format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
               "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
               "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
               "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", 0, ""),
      "# Per-Iteration Report: MPI_Wtime timing; i_* uses max over process rows; summary skips "
      "first 1 iterations \n"};
  for (const std::string& line : header)
    EXPECT_TRUE(has_line(lines, line)) << "missing: " << line << "in:\n" << r.out;
  const std::vector<Row> rows = rows_of(lines);
  EXPECT_EQ(rows.size(), 14u) << r.out; // 8 B to 64 KiB
  for (const Row& row : rows) {
    const auto& f = row.fields;
    ASSERT_EQ(f.size(), 21u) << row.line;
    std::string rebuilt_line = c_format("%12li  %12li  %8s  %6s  %6s", std::stol(f[0]),
                                        std::stol(f[1]), f[2].c_str(), f[3].c_str(), f[4].c_str());
    for (std::size_t p : {5u, 13u}) {
      EXPECT_EQ(f[p + 3], "N/A") << row.line; // -c 0
      rebuilt_line += c_format("  %7s  %6s  %6s    N/A  %7s  %7s  %7s  %7s", f[p].c_str(),
                               f[p + 1].c_str(), f[p + 2].c_str(), f[p + 4].c_str(),
                               f[p + 5].c_str(), f[p + 6].c_str(), f[p + 7].c_str());
      const double i_min = std::stod(f[p + 4]), i_max = std::stod(f[p + 5]);
      const double i_p99 = std::stod(f[p + 6]), cv = std::stod(f[p + 7]);
      EXPECT_LE(i_min, i_max) << row.line;
      EXPECT_LE(i_min, i_p99) << row.line;
      EXPECT_LE(i_p99, i_max) << row.line;
      EXPECT_GE(cv, 0) << row.line;
    }
    EXPECT_EQ(rebuilt_line + "\n", row.line);
  }
  Result<std::string> text = read_file(json);
  ASSERT_TRUE(text.ok()) << text.error().message();
  ::unlink(json.c_str());
  auto doc = json::parse(*text, json);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_STREQ((*doc)["config"]["per_iter_timing"].GetString(), "true");
  EXPECT_EQ((*doc)["config"]["per_iter_skip"].GetInt(), 1);
  ASSERT_EQ((*doc)["results"].Size(), 14u);
  for (const char* key : {"out_of_place_per_iter", "in_place_per_iter"}) {
    const auto& it = (*doc)["results"][0][key];
    EXPECT_EQ(it["skipped_iterations"].GetInt(), 1) << key;
    EXPECT_EQ(it["times_us"].Size(), 20u) << key;
    ASSERT_EQ(it["per_process_max_times_us"].Size(), 2u) << key;
    EXPECT_EQ(it["per_process_max_times_us"][1].Size(), 20u) << key;
    // Each iteration's time is the slower process's.
    for (unsigned i = 0; i < 20; ++i) {
      EXPECT_DOUBLE_EQ(it["times_us"][i].GetDouble(),
                       std::max(it["per_process_max_times_us"][0][i].GetDouble(),
                                it["per_process_max_times_us"][1][i].GetDouble()));
    }
  }
}

// nccl-tests' README: NCCL_TESTS_SPLIT="MOD 2" runs two groups, each on every other rank;
// the device lines' Group column says which, and each group's ranks check clean.
TEST(NcclTestsCompat, SplitRunsGroupsOnTheirOwnCommunicators) {
  MpiRun r = mpirun("all_reduce_perf", {"-b", "1K", "-e", "4K", "-f", "4", "-n", "2"},
                    {{"NCCL_TESTS_SPLIT", "MOD 2"}});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<int> groups;
  for (const std::string& line : testing::lines_of(r.out)) {
    int rank = -1, group = -1;
    if (std::sscanf(line.c_str(), "#  Rank %d Group %d", &rank, &group) == 2)
      groups.push_back(group);
  }
  EXPECT_EQ(groups, (std::vector<int>{0, 1, 0, 1})) << r.out;
  const std::vector<Row> rows = rows_of(testing::lines_of(r.out));
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const Row& row : rows) {
    EXPECT_EQ(row.fields[8], "0");
    // busbw = algbw x 2(n-1)/n with n = 2, the group's size: equal where printed alike.
    EXPECT_EQ(row.fields[6], row.fields[7]) << row.line;
  }
}

} // namespace
} // namespace fabric::nccltest
