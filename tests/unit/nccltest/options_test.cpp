// Option validation in its three steps: alone, against the backend, against the ranks.
#include <unistd.h>

#include <gtest/gtest.h>

#include "nccltest/comm_split.h"
#include "nccltest/options.h"

namespace fabric::nccltest {
namespace {

Result<Options> parse(std::vector<std::string> argv, std::string program = "fabric-nccltest") {
  CLI::App app;
  RawOptions raw;
  raw.program = std::move(program);
  add_options(app, raw);
  std::reverse(argv.begin(), argv.end());
  app.parse(argv);
  return validate_options(raw, {});
}

std::string message(const Result<Options>& r) {
  return r.ok() ? "" : r.error().message();
}

TEST(NcclTestOptions, NcclTestsShortOptionsAndSuffixes) {
  auto o =
      parse({"-b",  "8",  "-e",    "128M", "-f", "2",  "-n", "5",  "-w", "2",  "-c", "3",  "-o",
             "max", "-d", "int64", "-a",   "3",  "-z", "1",  "-T", "30", "-g", "1",  "-m", "2"});
  ASSERT_TRUE(o.ok()) << message(o);
  EXPECT_EQ(o->sweep.min_bytes, 8u);
  EXPECT_EQ(o->sweep.max_bytes, 128u << 20);
  EXPECT_EQ(o->sweep.step_factor, 2u);
  EXPECT_EQ(o->iters, 5);
  EXPECT_EQ(o->warmup_iters, 2);
  EXPECT_EQ(o->check_iters, 3);
  EXPECT_EQ(o->ops, std::vector<ReduceOp>{ReduceOp::kMax});
  EXPECT_EQ(o->types, std::vector<DataType>{DataType::kInt64});
  EXPECT_EQ(o->average, 3);
  EXPECT_EQ(o->blocking, 1);
  EXPECT_EQ(o->agg_iters, 2);
  EXPECT_DOUBLE_EQ(o->timeout_s, 30);
  auto long_forms = parse({"--minbytes", "1K", "--maxbytes", "1G", "--stepfactor", "4",
                           "--output_file", "out.json", "--datatype", "double"});
  ASSERT_TRUE(long_forms.ok()) << message(long_forms);
  EXPECT_EQ(long_forms->sweep.max_bytes, 1u << 30);
  EXPECT_EQ(long_forms->json_path, "out.json");
}

TEST(NcclTestOptions, DefaultsAreNcclTests) {
  auto o = parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->sweep.min_bytes, 32u << 20);
  EXPECT_EQ(o->sweep.max_bytes, 32u << 20);
  EXPECT_EQ(o->iters, 20);
  EXPECT_EQ(o->warmup_iters, 1);
  EXPECT_EQ(o->check_iters, 1);
  EXPECT_EQ(o->average, 1);
  EXPECT_EQ(o->collective, Collective::kAllReduce);
  EXPECT_FALSE(o->backend.has_value());
}

TEST(NcclTestOptions, NcclTestsProgramNamesPickTheCollective) {
  EXPECT_EQ(parse({}, "/usr/local/bin/reduce_scatter_perf")->collective,
            Collective::kReduceScatter);
  EXPECT_EQ(parse({"--collective", "broadcast"}, "broadcast_perf")->collective,
            Collective::kBroadcast);
  EXPECT_EQ(parse({"--collective", "alltoall"})->collective, Collective::kAllToAll);
  auto both = parse({"--collective", "all_reduce"}, "sendrecv_perf");
  EXPECT_EQ(message(both), "--collective: all_reduce contradicts the program's name, "
                           "sendrecv_perf");
}

TEST(NcclTestOptions, BadValuesNameTheOptionAndTheValue) {
  EXPECT_NE(message(parse({"-b", "1G", "-e", "1M"})).find("-b/--minbytes: 1073741824 is above"),
            std::string::npos);
  EXPECT_NE(message(parse({"-e", "12Q"})).find("-e/--maxbytes"), std::string::npos);
  EXPECT_NE(message(parse({"-e", "12Q"})).find("'12Q'"), std::string::npos);
  EXPECT_NE(message(parse({"-f", "0"})).find("-f/--stepfactor"), std::string::npos);
  EXPECT_NE(message(parse({"-f", "1.5"})).find("-f/--stepfactor"), std::string::npos);
  EXPECT_NE(message(parse({"-b", "8", "-e", "64", "-i", "0"})).find("-i/--stepbytes"),
            std::string::npos);
  EXPECT_NE(message(parse({"-n", "0"})).find("-n/--iters: 0 is out of range"), std::string::npos);
  EXPECT_NE(message(parse({"-a", "4"})).find("-a/--average"), std::string::npos);
  EXPECT_NE(message(parse({"-g", "0"})).find("-g/--ngpus: 0 is out of range"), std::string::npos);
  EXPECT_NE(message(parse({"-t", "65"})).find("-t/--nthreads"), std::string::npos);
  EXPECT_NE(message(parse({"-R", "3"})).find("-R/--local_register"), std::string::npos);
  EXPECT_NE(message(parse({"-d", "fp8"})).find("'fp8'"), std::string::npos);
  EXPECT_NE(message(parse({"--collective", "gather"})).find("--collective"), std::string::npos);
  EXPECT_NE(message(parse({"--min-busbw-pct", "150"})).find("--min-busbw-pct"), std::string::npos);
  EXPECT_NE(message(parse({"--pairs-size", "1M"})).find("only mean something with --pairs"),
            std::string::npos);
  EXPECT_NE(message(parse({"-T", "-1"})).find("-T/--timeout"), std::string::npos);
  EXPECT_NE(message(parse({"--pairs-pattern", "ring"})).find("only mean something with --pairs"),
            std::string::npos);
  EXPECT_NE(message(parse({"--pairs", "--pairs-pattern", "spiral"})).find("--pairs-pattern"),
            std::string::npos);
  // Ranks carry no leaf: the patterns that follow leaves point to the tool that has them.
  EXPECT_NE(message(parse({"--pairs", "--pairs-pattern", "leaf-local"})).find("fabric-probe mesh"),
            std::string::npos);
}

// The most common nccl-tests run of all: one 8-GPU node from one process.
TEST(NcclTestOptions, SeveralGpusAndThreadsPerProcessAndRegistrationAreTakenAsNcclTestsTakesThem) {
  auto o = parse({"-b", "8", "-e", "8G", "-f", "2", "-g", "8"});
  ASSERT_TRUE(o.ok()) << message(o);
  EXPECT_EQ(o->ngpus, 8);
  EXPECT_EQ(o->nthreads, 1);
  EXPECT_EQ(o->registration, 0);
  auto t = parse({"-g", "2", "-t", "4", "-R", "2"});
  ASSERT_TRUE(t.ok()) << message(t);
  EXPECT_EQ(t->ngpus, 2);
  EXPECT_EQ(t->nthreads, 4);
  EXPECT_EQ(t->registration, 2);
}

// -e 100G alone would take 1 MiB steps (-i's default): the fix to suggest is -f 2, and the
// option to blame the one typed.
TEST(NcclTestOptions, AHugeMaxbytesWithoutAFactorSuggestsOne) {
  auto o = parse({"-e", "100G"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().operation(), "-e/--maxbytes") << message(o);
  EXPECT_NE(message(o).find("give -f 2"), std::string::npos) << message(o);
  EXPECT_TRUE(parse({"-e", "100G", "-f", "2"}).ok());
  // With -i given, -i is the one to blame.
  EXPECT_EQ(parse({"-e", "100G", "-i", "1K"}).error().operation(), "-i/--stepbytes");
}

TEST(NcclTestOptions, PairsRefusesOutputsThatCannotServeIt) {
  EXPECT_NE(message(parse({"--pairs", "-e", "1M", "--plot", "p.svg"})).find("--plot: "),
            std::string::npos);
  EXPECT_NE(message(parse({"--pairs", "-e", "1M", "--prom", "p.prom"})).find("--prom: "),
            std::string::npos);
  EXPECT_TRUE(parse({"--pairs", "-e", "1M", "--pairs-heatmap", "h.svg", "-J", "p.json"}).ok());
}

TEST(NcclTestOptions, OutputPathsAreCheckedBeforeARun) {
  char dir[] = "/tmp/fabric-nccltest-out-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string folder = dir;
  auto ok = parse({"-J", folder + "/r.json", "--prom", folder + "/r.prom"});
  ASSERT_TRUE(ok.ok()) << message(ok);
  EXPECT_TRUE(check_output_paths(*ok).ok());
  auto relative = parse({"-J", "r.json"});
  EXPECT_TRUE(check_output_paths(*relative).ok()) << "the working directory";
  auto missing = parse({"--plot", folder + "/no/p.svg"});
  auto checked = check_output_paths(*missing);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().operation(), "--plot");
  EXPECT_NE(checked.error().message().find("no folder " + folder + "/no/"), std::string::npos)
      << checked.error().message();
  auto a_folder = parse({"-J", folder});
  ASSERT_FALSE(check_output_paths(*a_folder).ok());
  EXPECT_NE(check_output_paths(*a_folder).error().message().find("is a folder"), std::string::npos);
  ::rmdir(dir);
}

TEST(NcclTestOptions, TypeOrOpTheBackendLacksNamesBoth) {
  auto half = parse({"-d", "half"});
  ASSERT_TRUE(half.ok());
  auto refused = validate_for_backend(*half, BackendKind::kMpi);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            "-d/--datatype: half: the mpi backend has no such type (it has int8, uint8, int32, "
            "uint32, int64, uint64, float, double)");
  auto avg = parse({"-o", "avg"});
  ASSERT_TRUE(avg.ok());
  auto no_avg = validate_for_backend(*avg, BackendKind::kMpi);
  ASSERT_FALSE(no_avg.ok());
  EXPECT_NE(no_avg.error().message().find("avg: the mpi backend has no such operation"),
            std::string::npos);
  EXPECT_TRUE(validate_for_backend(*avg, BackendKind::kNccl).ok());
  // all_gather takes no operation, so -o avg does not matter there.
  auto gather = parse({"--collective", "all_gather", "-o", "avg"});
  ASSERT_TRUE(gather.ok());
  EXPECT_TRUE(validate_for_backend(*gather, BackendKind::kMpi).ok());
  auto graph = parse({"-G", "10"});
  ASSERT_TRUE(graph.ok());
  EXPECT_NE(validate_for_backend(*graph, BackendKind::kMpi).error().message().find("CUDA graphs"),
            std::string::npos);
}

TEST(NcclTestOptions, AllTypesAndOpsShrinkToWhatTheBackendHas) {
  auto all = parse({"-d", "all", "-o", "all"});
  ASSERT_TRUE(all.ok());
  auto names = [](const Options& o) {
    std::string out;
    for (DataType t : o.types)
      out += std::string(data_type_name(t)) + " ";
    for (ReduceOp op : o.ops)
      out += std::string(reduce_op_name(op)) + " ";
    return out;
  };
  // nccl-tests' order (its test_types and test_opnames), less what MPI has no type or
  // operation for.
  Options mpi = *all;
  ASSERT_TRUE(validate_for_backend(mpi, BackendKind::kMpi).ok());
  EXPECT_EQ(names(mpi), "int8 uint8 int32 uint32 int64 uint64 float double sum prod max min ");
  Options nccl = *all;
  ASSERT_TRUE(validate_for_backend(nccl, BackendKind::kNccl).ok());
  EXPECT_EQ(names(nccl), "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 "
                         "f8e4m3 f8e5m2 sum prod max min avg mulsum ");
  // fp8 as nccl-tests runs it: NCCL 2.24 and Hopper GPUs, else "all" leaves it out.
  Options hopper = nccl;
  ASSERT_TRUE(restrict_fp8(hopper, 22809, 90).ok());
  EXPECT_EQ(hopper.types.size(), 12u);
  Options ampere = nccl;
  ASSERT_TRUE(restrict_fp8(ampere, 22809, 80).ok());
  EXPECT_EQ(names(ampere), "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 "
                           "sum prod max min avg mulsum ");
  Options old_nccl = nccl;
  ASSERT_TRUE(restrict_fp8(old_nccl, 22304, 90).ok());
  EXPECT_EQ(old_nccl.types.size(), 10u);
  auto named = parse({"-d", "f8e5m2"});
  ASSERT_TRUE(named.ok());
  auto refused = restrict_fp8(*named, 22809, 86);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            "-d/--datatype: f8e5m2: fp8 needs every GPU of the run to be a Hopper or newer "
            "(compute capability 9.0; one has 8.6)");
  EXPECT_TRUE(restrict_fp8(*named, 22809, 100).ok());
  // mulsum: NCCL's pre-multiplied sum; MPI has none, and says so.
  auto mulsum = parse({"-o", "mulsum"});
  ASSERT_TRUE(mulsum.ok());
  auto on_mpi = validate_for_backend(*mulsum, BackendKind::kMpi);
  ASSERT_FALSE(on_mpi.ok());
  EXPECT_NE(on_mpi.error().message().find("mulsum: the mpi backend has no such operation"),
            std::string::npos);
}

// NCCL's one-rank path has no fp8 avg or mulsum (ncclInvalidArgument on an H200, NCCL
// 2.28.9): "-d all -o all" on one GPU runs every other pair and says which it left out; a
// run of only those pairs is refused before a GPU is touched.
TEST(NcclTestOptions, OneRankCommunicatorsLeaveOutFp8AvgAndMulsum) {
  auto all = parse({"-d", "all", "-o", "all"});
  ASSERT_TRUE(all.ok());
  ASSERT_TRUE(validate_for_backend(*all, BackendKind::kNccl).ok());
  Options two_ranks = *all;
  ASSERT_TRUE(restrict_one_rank_fp8(two_ranks, 2).ok());
  EXPECT_TRUE(two_ranks.left_out.empty());
  Options one_rank = *all;
  ASSERT_TRUE(restrict_one_rank_fp8(one_rank, 1).ok());
  EXPECT_EQ(one_rank.left_out.size(), 4u);
  EXPECT_TRUE(one_rank.leaves_out(DataType::kFloat8e4m3, ReduceOp::kAvg));
  EXPECT_TRUE(one_rank.leaves_out(DataType::kFloat8e5m2, ReduceOp::kMulSum));
  EXPECT_FALSE(one_rank.leaves_out(DataType::kFloat8e4m3, ReduceOp::kSum));
  EXPECT_FALSE(one_rank.leaves_out(DataType::kBfloat16, ReduceOp::kAvg));
  ASSERT_EQ(one_rank.notes.size(), 1u);
  EXPECT_EQ(one_rank.notes[0],
            "f8e4m3 avg, f8e4m3 mulsum, f8e5m2 avg, f8e5m2 mulsum left out: NCCL refuses fp8 "
            "avg and mulsum on a one-rank communicator (ncclInvalidArgument from its one-rank "
            "path)");

  // all_gather takes no operation: nothing to leave out.
  auto gather = parse({"--collective", "all_gather", "-d", "f8e4m3"});
  ASSERT_TRUE(gather.ok());
  ASSERT_TRUE(restrict_one_rank_fp8(*gather, 1).ok());
  EXPECT_TRUE(gather->left_out.empty());

  auto only = parse({"-d", "f8e5m2", "-o", "avg"});
  ASSERT_TRUE(only.ok());
  auto refused = restrict_one_rank_fp8(*only, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            "-o/--op: f8e5m2 avg: NCCL refuses fp8 avg and mulsum on a one-rank communicator "
            "(ncclInvalidArgument from its one-rank path)");
}

TEST(NcclTestOptions, WorldChecksRootCountsAndPairs) {
  auto bcast = parse({"--collective", "broadcast", "-r", "4"});
  ASSERT_TRUE(bcast.ok());
  auto root = validate_for_world(*bcast, BackendKind::kMpi, 4, {{"a", 4, std::nullopt}});
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.error().message(), "-r/--root: 4 is not a rank of this run (0 to 3)");

  // Memory is planned apart (memory_plan_test.cpp): sizes are reduced, not refused here.
  auto huge = parse({"-b", "16G", "-e", "16G"});
  ASSERT_TRUE(huge.ok());
  auto ints = validate_for_world(*huge, BackendKind::kMpi, 2, {});
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.error().message().find("counts in int"), std::string::npos);

  auto pairs = parse({"--pairs"});
  ASSERT_TRUE(pairs.ok());
  auto one_node = validate_for_world(*pairs, BackendKind::kMpi, 4, {{"a", 4, std::nullopt}});
  ASSERT_FALSE(one_node.ok());
  EXPECT_NE(one_node.error().message().find("--pairs-by rank"), std::string::npos);
  auto by_rank = parse({"--pairs", "--pairs-by", "rank"});
  ASSERT_TRUE(by_rank.ok());
  EXPECT_TRUE(validate_for_world(*by_rank, BackendKind::kMpi, 4, {{"a", 4, std::nullopt}}).ok());
}

} // namespace
} // namespace fabric::nccltest

namespace fabric::nccltest {
namespace {

// NCCL_TESTS_SPLIT_MASK and NCCL_TESTS_SPLIT with the examples of nccl-tests' README.
TEST(NcclTestsSplit, ColoursAsNcclTestsComputesThem) {
  auto colour = [](const char* mask, const char* split, int rank) {
    auto c = split_color(mask, split, rank);
    EXPECT_TRUE(c.ok()) << c.error().message();
    return c.ok() && *c ? **c : -1;
  };
  EXPECT_FALSE(split_color(nullptr, nullptr, 5)->has_value()); // no split
  // "AND 0x7" / "MOD 8": 8 groups, one GPU of each node per group.
  EXPECT_EQ(colour(nullptr, "AND 0x7", 13), 5);
  EXPECT_EQ(colour(nullptr, "MOD 8", 13), 5);
  EXPECT_EQ(colour(nullptr, "%8", 13), 5);
  // "OR 0x7" / "DIV 8": one group per node.
  EXPECT_EQ(colour(nullptr, "OR 0x7", 13), 15);
  EXPECT_EQ(colour(nullptr, "div 8", 13), 1);
  EXPECT_EQ(colour(nullptr, "& 0b1", 13), 1);
  EXPECT_EQ(colour("0x7", nullptr, 13), 5);
  EXPECT_EQ(colour("7", "DIV 8", 13), 5); // the mask wins, as in nccl-tests
  for (const char* bad : {"MOD 0", "XOR 3", "AND", "DIV x"}) {
    auto c = split_color(nullptr, bad, 3);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.error().operation(), "NCCL_TESTS_SPLIT");
  }
  EXPECT_FALSE(split_color("0xz", nullptr, 3).ok());
}

// -y, -x and -M: applied by the nccl backend (engine_nccl_flags_test.cpp), one line each on
// host memory; -y with -G refused, since CUDA cannot capture its legacy default stream.
TEST(NcclTestOptions, StreamNullCtaPolicyAndMemoryReport) {
  auto o = parse({"-y", "1", "-x", "1", "-M", "1"});
  ASSERT_TRUE(o.ok()) << message(o);
  EXPECT_TRUE(o->stream_null);
  EXPECT_EQ(o->cta_policy, 1);
  EXPECT_TRUE(o->memory_report);
  Options nccl = *o;
  ASSERT_TRUE(validate_for_backend(nccl, BackendKind::kNccl).ok());
  EXPECT_TRUE(nccl.notes.empty()) << nccl.notes.front();
  EXPECT_TRUE(nccl.memory_report);
  Options mpi = *o;
  ASSERT_TRUE(validate_for_backend(mpi, BackendKind::kMpi).ok());
  EXPECT_EQ(mpi.notes,
            (std::vector<std::string>{
                "-y 1 (stream_null): no CUDA stream on host memory (mpi backend): ignored",
                "-x 1 (cta_policy): no NCCL on host memory (mpi backend): ignored",
                "-M 1 (memory): no GPU memory to report on host memory (mpi backend): "
                "ignored"}));
  EXPECT_FALSE(mpi.memory_report) << "the footer would print a GPU line for host memory";
  auto graph = parse({"-y", "1", "-G", "2"});
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(message(graph).find("-y/--stream_null"), std::string::npos) << message(graph);
  EXPECT_NE(message(graph).find("legacy default stream"), std::string::npos);
}

} // namespace
} // namespace fabric::nccltest
