// fabric-probe lint: per-node pre-flight checks of the RoCE parameter plane (MTU, RoCE v2
// GIDs, PFC on the RoCE priority, rdma_cm's RoCE mode, memlock, RDMA netns mode, the
// GPU-NIC distance on PCIe).
#include <cstdio>
#include <memory>
#include <string>

#include "common/cli.h"
#include "common/cuda_runtime.h"
#include "probes/cli/commands.h"
#include "probes/lint/lint.h"
#include "probes/lint/lint_args.h"
#include "probes/lint/lint_collect.h"
#include "probes/lint/lint_report.h"

namespace fabric::probes {
namespace {

int run_lint_command(const LintArgs& args) {
  auto options = make_lint_options(args);
  if (!options.ok()) return cli::fail(kProgram, options.error());
  LintSources sources;
  sources.root = args.root;
  // The CUDA runtime knows the job's GPUs exactly, but only those of this machine.
  if (args.root == "/") sources.cuda_bus_ids = cuda::pci_bus_ids;
  auto inputs = collect_lint_inputs(sources, args.devices, {args.gpu, args.interface});
  if (!inputs.ok()) {
    // Whatever went wrong, the node could not be checked: a system error, not a verdict.
    cli::fail(kProgram, inputs.error());
    return kExitSystem;
  }
  auto checks = run_lint(*inputs, *options);
  std::string out = args.json ? render_lint_json(checks) : render_lint_text(checks);
  std::fputs(out.c_str(), stdout);
  return lint_exit_status(checks);
}

} // namespace

Subcommand add_lint_command(CLI::App& app) {
  auto args = std::make_shared<LintArgs>();
  auto* cmd = app.add_subcommand(
      "lint", "Pre-flight checks of this node's RoCE setup: MTU, RoCE v2 GIDs, PFC on the "
              "RoCE priority, rdma_cm RoCE mode, memlock, RDMA netns mode, GPU-NIC distance "
              "(exit 3 if one fails)");
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->add_option("-d,--device", args->devices,
                  "Only this RDMA device (repeatable); also the NIC the GPUs are checked against")
      ->type_name("DEVICE");
  // The validators' own descriptions ("INT in [0 - 63]") would replace the placeholder.
  cmd->add_option("--dscp", args->dscp,
                  "DSCP (0-63) that RoCE traffic carries, looked up in the DCB APP table "
                  "(default 26)")
      ->check(CLI::Range(0, 63).description(""))
      ->type_name("N");
  cmd->add_option("--expect-netns-mode", args->expect_netns_mode,
                  "Warn unless the RDMA netns mode is this: shared or exclusive")
      ->check(CLI::IsMember({"shared", "exclusive"}).description(""))
      ->type_name("MODE");
  cmd->add_option("--min-memlock", args->min_memlock,
                  "Smallest acceptable RLIMIT_MEMLOCK soft limit, e.g. 64M (default 64M)")
      ->type_name("SIZE");
  cmd->add_option("--gpu", args->gpu,
                  "Check the GPU-NIC distance of the job's CUDA device N only (default: the GPUs "
                  "CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES give it, else every GPU)")
      ->check(CLI::NonNegativeNumber.description(""))
      ->type_name("N");
  cmd->add_option("--interface", args->interface,
                  "The job's RoCE interface (a pod's net1): check the GPUs against the NIC it "
                  "sits on (default: the NICs of this network namespace's netdevs)")
      ->type_name("NETDEV");
  cmd->add_option("--root", args->root,
                  "Folder that stands for / when reading sysfs and configfs (default /)")
      ->type_name("DIR");
  return {cmd, [args] { return run_lint_command(*args); }};
}

} // namespace fabric::probes
