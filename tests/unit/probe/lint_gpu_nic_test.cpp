// fabric-probe lint's gpu_nic_distance: which GPUs and NICs it picks (--gpu, --device,
// --interface, the variables, a pod's namespace) over the fixtures of tests/data/probe/topo,
// its verdicts, and the built binary's exit status.
#include <unistd.h>

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "probes/lint/lint.h"
#include "probes/lint/lint_collect.h"
#include "probes/lint/lint_report.h"

namespace fabric::probes {
namespace {

namespace fs = std::filesystem;

const std::string kTopo = FABRIC_TEST_DATA_DIR "/probe/topo/";

#define EXPECT_MENTIONS(check, text)                                                               \
  EXPECT_NE((check).message.find(text), std::string::npos) << (check).message

// The gpu_nic_distance checks of a fixture node with these variables and choices.
class GpuNicLint : public ::testing::Test {
protected:
  std::vector<LintCheck> lint(const std::string& fixture, std::vector<std::string> only = {},
                              GpuNicChoice choice = {}) {
    sources_.root = root_.empty() ? kTopo + fixture : root_;
    sources_.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    auto node = topo::read_node_topology({sources_.root, nullptr});
    EXPECT_TRUE(node.ok()) << node.error().message();
    auto inputs = choose_gpus_and_nics(std::move(*node), sources_, only, choice);
    EXPECT_TRUE(inputs.ok()) << inputs.error().message();
    if (!inputs.ok()) return {};
    inputs_ = *inputs;
    return check_gpu_nic_distance(inputs);
  }

  Result<GpuNicInputs> choose(const std::string& fixture, std::vector<std::string> only,
                              GpuNicChoice choice) {
    sources_.root = kTopo + fixture;
    sources_.getenv = [](const std::string&) { return std::optional<std::string>(); };
    auto node = topo::read_node_topology({sources_.root, nullptr});
    return choose_gpus_and_nics(std::move(*node), sources_, only, choice);
  }

  static LintCheck only_check(const std::vector<LintCheck>& checks) {
    EXPECT_EQ(checks.size(), 1u) << render_lint_text(checks);
    return checks.empty() ? LintCheck{} : checks.front();
  }

  LintSources sources_;
  std::map<std::string, std::string> env_;
  std::string root_;
  GpuNicInputs inputs_;
};

TEST_F(GpuNicLint, EveryGpuOfADgxHasItsNicsAtPxb) {
  auto checks = lint("dgx-a100");
  ASSERT_EQ(checks.size(), 8u) << render_lint_text(checks);
  for (const auto& c : checks) {
    EXPECT_EQ(c.id, "gpu_nic_distance");
    EXPECT_EQ(c.verdict, Verdict::kPass) << c.subject << ": " << c.message;
  }
  EXPECT_EQ(checks[0].subject, "GPU0 0000:07:00.0");
  EXPECT_MENTIONS(checks[0], "mlx5_0 (0000:0c:00.0), mlx5_1 (0000:12:00.0) at PXB from GPU0");
  EXPECT_MENTIONS(checks[0], "GPUDirect RDMA via nvidia-peermem");
  EXPECT_EQ(inputs_.gpus_from, "every GPU");
  EXPECT_EQ(inputs_.nics_from, "the RDMA NICs of this network namespace's netdevs");
  EXPECT_EQ(lint_exit_status(checks), kExitOk);
}

TEST_F(GpuNicLint, GpuAndItsNicOnDifferentSocketsFails) {
  auto checks = lint("two-socket");
  ASSERT_EQ(checks.size(), 8u) << render_lint_text(checks);
  // GPU0-3 reach mlx4_0 through socket 0's host bridge; GPU4-7 across the sockets.
  EXPECT_EQ(checks[0].verdict, Verdict::kWarn) << checks[0].message;
  EXPECT_MENTIONS(checks[0], "mlx4_0 (0000:01:00.0) at PHB from GPU0, through the host bridge");
  EXPECT_MENTIONS(checks[0], "NCCL_NET_GDR_LEVEL=PHB");
  EXPECT_EQ(checks[4].verdict, Verdict::kFail) << checks[4].message;
  EXPECT_EQ(checks[4].subject, "GPU4 0000:84:00.0");
  EXPECT_MENTIONS(checks[4], "at SYS from GPU4, across sockets (NUMA node 1 to 0)");
  EXPECT_MENTIONS(checks[4], "no RDMA NIC of this node is closer");
  EXPECT_MENTIONS(checks[4], "GPUDirect RDMA is off");
  EXPECT_EQ(lint_exit_status(checks), kExitBelowThreshold);
}

TEST_F(GpuNicLint, TheNamedNicIsFarAndTheCloserOneIsNamed) {
  env_["CUDA_VISIBLE_DEVICES"] = "0";
  const LintCheck c = only_check(lint("hgx-h800", {"mlx5_4"}));
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_EQ(c.subject, "GPU0 0000:18:00.0");
  EXPECT_MENTIONS(c, "mlx5_4 (0000:2b:00.0) at NODE from GPU0, across host bridges "
                     "(pci0000:15, pci0000:27) of NUMA node 0");
  EXPECT_MENTIONS(c, "mlx5_2 (0000:19:00.0) is at PIX: attach the job's RoCE interface there");
  EXPECT_MENTIONS(c, "[NICs: --device mlx5_4]");
  EXPECT_EQ(inputs_.gpus_from, "CUDA_VISIBLE_DEVICES=0");
}

TEST_F(GpuNicLint, GpuOptionCountsWithinTheJobsGpus) {
  // The container got host GPUs 1 and 3; its CUDA device 1 is GPU3, beside mlx5_8.
  env_["NVIDIA_VISIBLE_DEVICES"] = "1,3";
  const LintCheck c = only_check(lint("hgx-h800", {}, {1, ""}));
  EXPECT_EQ(c.subject, "GPU3 0000:5d:00.0");
  EXPECT_EQ(c.verdict, Verdict::kPass) << c.message;
  EXPECT_MENTIONS(c, "mlx5_8 (0000:5e:00.0) at PIX");
  EXPECT_MENTIONS(c, "GPUDirect RDMA via dma-buf");
  EXPECT_EQ(inputs_.gpus_from, "--gpu 1 of NVIDIA_VISIBLE_DEVICES=1,3");
}

TEST_F(GpuNicLint, InterfaceOfAPodIsFoundThroughTheGidTable) {
  // net1 lives in a pod's namespace: only mlx5_8's GID table names it.
  auto checks = lint("hgx-h800", {}, {3, "net1"});
  const LintCheck c = only_check(checks);
  EXPECT_EQ(c.verdict, Verdict::kPass) << c.message;
  EXPECT_MENTIONS(c, "mlx5_8 (0000:5e:00.0) at PIX from GPU3");
  EXPECT_EQ(inputs_.nics_from, "the NIC under --interface net1");
  // The same pod on GPU0 is across the host bridges.
  checks = lint("hgx-h800", {}, {0, "net1"});
  EXPECT_EQ(only_check(checks).verdict, Verdict::kFail);
  // A host netdev leads to its PCI function.
  checks = lint("hgx-h800", {}, {4, "ens109np0"});
  EXPECT_MENTIONS(only_check(checks), "mlx5_1 (0000:9b:00.0) at PIX from GPU4");
}

TEST_F(GpuNicLint, InAPodTheNicsAreThoseOfItsNamespace) {
  // What a pod's sysfs shows: every PCI device and RDMA device (shared mode), but only the
  // pod's own netdevs (lo and its macvlan net1) in class/net.
  fs::path root = fs::temp_directory_path() / ("fabric-topo-pod-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::copy(kTopo + "hgx-h800", root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(root / "sys/class/net");
  fs::create_directories(root / "sys/class/net/net1");
  fs::create_directories(root / "sys/class/net/lo");
  root_ = root.string();
  env_["CUDA_VISIBLE_DEVICES"] = "0";
  auto checks = lint("");
  fs::remove_all(root);
  const LintCheck c = only_check(checks);
  EXPECT_EQ(c.verdict, Verdict::kFail) << c.message;
  EXPECT_MENTIONS(c, "mlx5_8 (0000:5e:00.0) at NODE from GPU0");
  EXPECT_MENTIONS(c, "mlx5_2 (0000:19:00.0) is at PIX");
  EXPECT_EQ(inputs_.nics, std::vector<std::size_t>{8});
}

TEST_F(GpuNicLint, VariableEntriesThatNameNoGpuWarn) {
  env_["CUDA_VISIBLE_DEVICES"] = "3,12";
  auto checks = lint("hgx-h800");
  ASSERT_EQ(checks.size(), 2u) << render_lint_text(checks);
  EXPECT_EQ(checks[0].verdict, Verdict::kWarn);
  EXPECT_EQ(checks[0].subject, "gpus");
  EXPECT_MENTIONS(checks[0], "CUDA_VISIBLE_DEVICES entry '12' names no GPU");
  EXPECT_EQ(checks[1].subject, "GPU3 0000:5d:00.0");

  env_["CUDA_VISIBLE_DEVICES"] = "";
  const LintCheck none = only_check(lint("hgx-h800"));
  EXPECT_EQ(none.verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(none, "gives the job no GPU");
}

TEST_F(GpuNicLint, NoGpuOrOnlySoftRoceIsUnknown) {
  const LintCheck c = only_check(lint("cpu-node"));
  EXPECT_EQ(c.verdict, Verdict::kUnknown);
  EXPECT_EQ(c.subject, "node");
  EXPECT_MENTIONS(c, "no GPU on this node");

  // GPUs with nothing but a software RDMA device to use.
  auto node = topo::read_node_topology({kTopo + "two-socket", nullptr});
  ASSERT_TRUE(node.ok());
  GpuNicInputs in;
  in.node = std::move(*node);
  in.node.nics[0].pci.reset();
  in.node.nics[0].rdma_device = "rxe0";
  in.gpus = {0};
  in.nics = {0};
  in.nics_from = "every RDMA NIC";
  const LintCheck soft = only_check(check_gpu_nic_distance(in));
  EXPECT_EQ(soft.verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(soft, "no NIC with a PCI function among rxe0");

  auto unreadable = check_gpu_nic_distance(Error(ErrorCode::kDecode, "reading class"));
  EXPECT_EQ(only_check(unreadable).verdict, Verdict::kUnknown);
}

TEST_F(GpuNicLint, ChoicesThatNameNothingAreErrors) {
  auto gpu = choose("hgx-h800", {}, {9, ""});
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(gpu.error().message().find("--gpu 9: the job sees 8 GPU(s) (every GPU)"),
            std::string::npos)
      << gpu.error().message();
  auto none = choose("cpu-node", {}, {0, ""});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("no GPU on this node"), std::string::npos);
  auto iface = choose("hgx-h800", {}, {std::nullopt, "eth7"});
  ASSERT_FALSE(iface.ok());
  EXPECT_EQ(iface.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(iface.error().message().find("no such netdev"), std::string::npos)
      << iface.error().message();
}

TEST(GpuNicCollect, WiredIntoTheLintCollector) {
  // The lint fixture has RDMA devices but no PCI functions: no GPU, an unknown verdict.
  LintSources sources;
  sources.root = FABRIC_TEST_DATA_DIR "/probe/lint";
  sources.memlock = [] { return Result<MemlockLimit>(MemlockLimit{}); };
  sources.netns_mode = [] { return Result<rdma::NetnsMode>(rdma::NetnsMode::kShared); };
  sources.ipv4_addresses = [] { return Result<Ipv4ByNetdev>(Ipv4ByNetdev{}); };
  auto in = collect_lint_inputs(sources, {"rxe0"});
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_TRUE(in->gpu_nic.ok()) << in->gpu_nic.error().message();
  EXPECT_TRUE(in->gpu_nic->node.gpus.empty());
  EXPECT_EQ(in->gpu_nic->nics_from, "--device rxe0");
  auto gpu = collect_lint_inputs(sources, {}, {0, ""});
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().code(), ErrorCode::kNotFound);
}

// --- the binary ---------------------------------------------------------------------------

TEST(GpuNicLintCli, AFarNicFailsTheNode) {
  SubprocessOptions options;
  options.environment = std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "0"}};
  auto run = run_subprocess(
      {FABRIC_PROBE_BINARY, "lint", "--json", "--root", kTopo + "hgx-h800", "-d", "mlx5_4"},
      options);
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->exit_status, 3) << run->stderr_text;
  auto doc = json::parse(run->stdout_text, "lint --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const rapidjson::Value* found = nullptr;
  for (const auto& c : (*doc)["checks"].GetArray()) {
    if (std::string(c["id"].GetString()) == "gpu_nic_distance") found = &c;
  }
  ASSERT_NE(found, nullptr) << run->stdout_text;
  EXPECT_STREQ((*found)["subject"].GetString(), "GPU0 0000:18:00.0");
  EXPECT_STREQ((*found)["verdict"].GetString(), "fail");

  auto bad = run_subprocess(
      {FABRIC_PROBE_BINARY, "lint", "--root", kTopo + "hgx-h800", "--gpu", "8"}, options);
  ASSERT_TRUE(bad.ok()) << bad.error().message();
  EXPECT_EQ(bad->exit_status, 2) << bad->stderr_text;
  EXPECT_NE(bad->stderr_text.find("--gpu 8"), std::string::npos) << bad->stderr_text;
}

} // namespace
} // namespace fabric::probes
