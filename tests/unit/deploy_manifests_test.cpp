// deploy/ as an operator applies it, checked without a cluster: every manifest parses; every
// container that runs a fabrickit binary passes only flags that binary has; the node
// DaemonSet keeps to its list of capabilities and mounts; its configuration is accepted by
// the tools that read it; and every metric the alerts and the dashboard use is one the
// exporter or fabric-nccltest documents.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/subprocess.h"
#include "exporters/nccl_profiler/plugin_config.h"
#include "pfc/profile.h"
#include "tests/unit/deploy_manifests.h"

// In deploy_test, beside the helpers of deploy_manifests.h.
namespace fabric::deploy_test {
namespace {

namespace fs = std::filesystem;

const std::string kDeploy = deploy_dir();

std::string read_text(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : std::string();
}

TEST(DeployManifests, EveryYamlFileParsesAndEveryObjectIsNamed) {
  auto files = files_under(kDeploy, ".yaml");
  ASSERT_GE(files.size(), 10u);
  for (const auto& path : files) {
    std::vector<YAML::Node> docs;
    ASSERT_NO_THROW(docs = YAML::LoadAllFromFile(path.string())) << path;
    ASSERT_FALSE(docs.empty()) << path;
  }
  for (const auto& [file, object] : kubernetes_objects()) {
    EXPECT_TRUE(object["apiVersion"] && object["kind"]) << file;
    EXPECT_TRUE(object["metadata"]["name"]) << file << ": " << object["kind"];
  }
}

// `binary [subcommand] --help`, cached: the text every flag must appear in.
std::string help_text(const std::string& binary, const std::string& subcommand) {
  static std::map<std::string, std::string> cache;
  static const std::map<std::string, std::string> paths = {
      {"fabric-probe", FABRIC_PROBE_BINARY},
      {"fabric-pfc", FABRIC_PFC_BINARY},
      {"fabric-cni", FABRIC_CNI_BINARY},
      {"fabric-exporter", FABRIC_EXPORTER_BINARY},
      {"fabric-nccltest", FABRIC_NCCLTEST_BINARY}};
  const std::string key = binary + " " + subcommand;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<std::string> argv = {paths.at(binary)};
  if (!subcommand.empty()) argv.push_back(subcommand);
  argv.push_back("--help");
  auto r = run_subprocess(argv, {});
  std::string text = r.ok() && r->exit_status == 0 ? r->stdout_text : "";
  cache[key] = text;
  return text;
}

TEST(DeployManifests, ContainersPassOnlyFlagsTheirBinaryHas) {
  const std::set<std::string> with_subcommands = {"fabric-probe", "fabric-pfc"};
  int checked = 0;
  for (const auto& [file, object] : kubernetes_objects()) {
    for (const auto& spec : pod_specs(object)) {
      for (const auto& c : containers_of(spec)) {
        if (!c["command"]) continue;
        std::vector<std::string> argv;
        for (const auto& part : c["command"])
          argv.push_back(part.as<std::string>());
        if (c["args"]) {
          for (const auto& part : c["args"])
            argv.push_back(part.as<std::string>());
        }
        // mpirun's program and its arguments follow the first fabric-* word.
        auto program = std::find_if(argv.begin(), argv.end(), [](const std::string& a) {
          return a.rfind("fabric-", 0) == 0;
        });
        if (program == argv.end()) continue;
        const std::string binary = *program;
        std::string subcommand;
        if (with_subcommands.count(binary) && program + 1 != argv.end()) subcommand = program[1];
        const std::string help = help_text(binary, subcommand);
        ASSERT_FALSE(help.empty())
            << file << ": `" << binary << " " << subcommand << " --help` failed";
        for (auto a = program + 1; a != argv.end(); ++a) {
          if (a->rfind("--", 0) != 0) continue;
          const std::string flag = a->substr(0, a->find('='));
          EXPECT_NE(help.find(flag), std::string::npos)
              << file << ": container " << c["name"] << " passes " << flag << " to " << binary
              << " " << subcommand << ", which has no such option";
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 15) << "the manifests' flags were not found";
}

YAML::Node node_daemonset() {
  return object_named("DaemonSet", "fabrickit-node");
}
YAML::Node cni_daemonset() {
  return object_named("DaemonSet", "fabrickit-cni");
}
YAML::Node cleanup_daemonset() {
  return object_named("DaemonSet", "fabrickit-cleanup");
}

bool read_only(const YAML::Node& mount) {
  return mount["readOnly"] && mount["readOnly"].as<bool>();
}

TEST(DeployManifests, TheDaemonSetsHaveOnlyTheCapabilitiesAndMountsTheyNeed) {
  const std::map<std::string, std::set<std::string>> capabilities = {
      {"install-cni", {}},
      {"cni-installed", {}},
      {"nccl-profiles-dir", {}},
      {"apply-pfc", {"NET_ADMIN"}},
      {"pfc-keeper", {"NET_ADMIN"}},
      {"exporter", {"NET_ADMIN", "NET_RAW"}},
      {"probe-agent", {"IPC_LOCK"}},
      {"kube-rbac-proxy", {}},
      {"remove-accounting", {"NET_ADMIN", "NET_RAW"}},
      {"remove-files", {}},
      {"done", {}}};
  // Host paths a container may write: the CNI bin directory (the installer), the textfile
  // directory (the keeper's metric), NFD's feature files, the xtables lock, the NCCL
  // profile directory (the exporter removes exited writers' files), and the two parts of
  // /sys the PFC profile's knobs live in.
  const std::set<std::string> writable_host_paths = {
      "/opt/cni/bin",
      "/var/lib/fabric/textfile",
      "/etc/kubernetes/node-feature-discovery/features.d",
      "/run/xtables.lock",
      "/run/fabric/nccl",
      "/sys/devices",
      "/sys/kernel/config"};
  const std::set<std::string> sys_writers = {"apply-pfc", "pfc-keeper"};
  std::set<std::string> seen;
  for (const YAML::Node& ds : {cni_daemonset(), node_daemonset(), cleanup_daemonset()}) {
    ASSERT_TRUE(ds) << "the cni, node and cleanup DaemonSets are in deploy/kubernetes";
    YAML::Node spec = ds["spec"]["template"]["spec"];
    const std::string ds_name = ds["metadata"]["name"].as<std::string>();
    EXPECT_TRUE(spec["hostNetwork"].as<bool>()) << ds_name;
    EXPECT_TRUE(spec["nodeSelector"]) << ds_name << " runs only on labelled RoCE nodes";
    EXPECT_FALSE(spec["automountServiceAccountToken"].as<bool>(true))
        << ds_name << ": only kube-rbac-proxy talks to the API server, with a token of its own";
    bool tolerates_gpu = false;
    for (const auto& t : spec["tolerations"])
      tolerates_gpu |= t["key"].as<std::string>("") == "nvidia.com/gpu" || !t["key"];
    EXPECT_TRUE(tolerates_gpu) << ds_name;

    std::map<std::string, std::string> host_paths;
    for (const auto& v : spec["volumes"]) {
      if (v["hostPath"])
        host_paths[v["name"].as<std::string>()] = v["hostPath"]["path"].as<std::string>();
    }
    for (const auto& [name, path] : host_paths) {
      EXPECT_NE(path, "/") << "volume " << name;
      EXPECT_NE(path, "/var/log") << "volume " << name;
      // Every pod's logs, for nothing but directory names: pods are named from fabric-cni's
      // records instead.
      EXPECT_NE(path, "/var/log/pods") << "volume " << name;
    }

    for (const auto& c : containers_of(spec)) {
      const std::string name = c["name"].as<std::string>();
      seen.insert(name);
      ASSERT_TRUE(capabilities.count(name)) << "container " << name << " is not in the list";
      YAML::Node sc = c["securityContext"];
      ASSERT_TRUE(sc) << name;
      EXPECT_FALSE(sc["privileged"] && sc["privileged"].as<bool>()) << name;
      EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>()) << name;
      EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false)) << name;
      std::set<std::string> dropped, added;
      for (const auto& d : sc["capabilities"]["drop"])
        dropped.insert(d.as<std::string>());
      if (sc["capabilities"]["add"]) {
        for (const auto& a : sc["capabilities"]["add"])
          added.insert(a.as<std::string>());
      }
      EXPECT_TRUE(dropped.count("ALL")) << name << " keeps the runtime's default capabilities";
      EXPECT_EQ(added, capabilities.at(name)) << name;
      EXPECT_TRUE(c["resources"]["requests"] && c["resources"]["limits"]) << name;
      for (const auto& m : c["volumeMounts"]) {
        const std::string volume = m["name"].as<std::string>();
        EXPECT_FALSE(m["mountPropagation"]) << name << " propagates mounts of " << volume;
        if (!host_paths.count(volume)) continue;
        const std::string& path = host_paths[volume];
        if (read_only(m)) {
          // Read-only all the way down: without it, mounts below (configfs, cgroup under
          // /sys; anything mounted later) stay writable.
          const std::string rro = m["recursiveReadOnly"].as<std::string>("");
          EXPECT_TRUE(rro == "IfPossible" || rro == "Enabled")
              << name << " mounts " << path << " read-only but not recursively";
          continue;
        }
        EXPECT_TRUE(writable_host_paths.count(path))
            << name << " mounts the host's " << path << " writable";
        if (path.rfind("/sys", 0) == 0) {
          EXPECT_TRUE(sys_writers.count(name)) << name << " mounts " << path << " writable";
        }
        if (path == "/sys/devices" || path == "/sys/kernel/config") {
          EXPECT_EQ(m["mountPath"].as<std::string>(), "/host" + path) << name;
        }
      }
    }
    if (ds_name == "fabrickit-cleanup") continue; // runs once, its container only waits
    for (const auto& c : spec["containers"]) {
      EXPECT_TRUE(c["livenessProbe"] && c["readinessProbe"]) << c["name"];
    }
  }
  EXPECT_EQ(seen.size(), capabilities.size());
}

// Deleting the DaemonSets leaves the accounting's rules (walked by every packet), the plugin
// and the feature file that labels the node: cleanup.yaml removes each.
TEST(DeployManifests, TheCleanupRemovesWhatTheDaemonSetsLeave) {
  YAML::Node spec = cleanup_daemonset()["spec"]["template"]["spec"];
  ASSERT_TRUE(spec);
  std::string commands;
  for (const auto& c : spec["initContainers"]) {
    for (const char* key : {"command", "args"}) {
      for (const auto& part : c[key])
        commands += part.as<std::string>() + " ";
    }
  }
  EXPECT_NE(commands.find("fabric-exporter --cleanup"), std::string::npos) << commands;
  EXPECT_NE(commands.find("/host/opt/cni/bin/fabric-cni"), std::string::npos) << commands;
  EXPECT_NE(commands.find("/host/nfd/fabrickit-pfc"), std::string::npos) << commands;
  for (const auto& t : spec["tolerations"])
    EXPECT_EQ(t["operator"].as<std::string>(), "Exists");
}

// The installer is a DaemonSet of its own: no device request that keeps it Pending where
// the device plugin is missing, and every taint tolerated, as Multus' and node-exporter's.
TEST(DeployManifests, TheCniInstallerRunsOnEveryRoceNodeWhateverItsTaints) {
  YAML::Node spec = cni_daemonset()["spec"]["template"]["spec"];
  ASSERT_TRUE(spec);
  bool every_taint = false;
  for (const auto& t : spec["tolerations"]) {
    every_taint |= !t["key"] && !t["effect"] && t["operator"].as<std::string>("") == "Exists";
  }
  EXPECT_TRUE(every_taint) << "a tainted node would be left without the plugin";
  for (const auto& c : containers_of(spec)) {
    for (const char* kind : {"requests", "limits"}) {
      for (const auto& r : c["resources"][kind]) {
        const std::string resource = r.first.as<std::string>();
        EXPECT_TRUE(resource == "cpu" || resource == "memory")
            << c["name"] << " asks for " << resource << ": Pending where it is not offered";
      }
    }
  }
  for (const auto& c : containers_of(node_daemonset()["spec"]["template"]["spec"])) {
    EXPECT_NE(c["name"].as<std::string>(), "install-cni") << "the node pod still installs";
  }
}

TEST(DeployManifests, TheCniPluginIsInstalledByCopyThenRename) {
  YAML::Node spec = cni_daemonset()["spec"]["template"]["spec"];
  std::string script;
  for (const auto& c : spec["initContainers"]) {
    if (c["name"].as<std::string>() == "install-cni") script = c["args"][0].as<std::string>();
  }
  // A temporary name in the destination directory, renamed over the plugin.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      script, m,
      std::regex(
          R"(cp \S+ (/host/opt/cni/bin/\.[\w.-]+) .*mv -f \1 /host/opt/cni/bin/fabric-cni)")))
      << script;
}

TEST(DeployManifests, TheConfigMapsProfileAndExporterConfigurationAreAccepted) {
  std::string profile = config_map_value("pfc-profile.yaml");
  ASSERT_FALSE(profile.empty());
  auto parsed = pfc::parse_profile(profile, "pfc-profile.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_FALSE(parsed->devices.empty());

  std::string exporter = config_map_value("exporter.yaml");
  ASSERT_FALSE(exporter.empty());
  const std::string path = ::testing::TempDir() + "deploy-exporter.yaml";
  std::ofstream(path) << exporter;
  auto r = run_subprocess({FABRIC_EXPORTER_BINARY, "--config", path, "--check-config"}, {});
  fs::remove(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0) << r->stdout_text << r->stderr_text;
}

// The exporter reads the NCCL profiler's files where the plugin writes them when a job's pod
// sets nothing but NCCL_PROFILER_PLUGIN: the plugin's default directory, from the host.
TEST(DeployManifests, TheNodeDaemonSetSeesTheHostsProcesses) {
  YAML::Node spec = node_daemonset()["spec"]["template"]["spec"];
  EXPECT_TRUE(spec["hostPID"] && spec["hostPID"].as<bool>())
      << "without it no NCCL profiler file is bound to its process and pod";
}

TEST(DeployManifests, TheExporterReadsTheNcclProfilesWhereThePluginWritesThem) {
  YAML::Node exporter = YAML::Load(config_map_value("exporter.yaml"));
  const std::string dir = exporter["collectors"]["nccl"]["directory"].as<std::string>("");
  EXPECT_EQ(dir, nccl_profiler::kDefaultDir);

  YAML::Node spec = node_daemonset()["spec"]["template"]["spec"];
  std::string volume;
  for (const auto& c : spec["containers"]) {
    for (const auto& m : c["volumeMounts"]) {
      if (m["mountPath"].as<std::string>() == dir) volume = m["name"].as<std::string>();
    }
  }
  ASSERT_FALSE(volume.empty()) << "no container mounts " << dir;
  for (const auto& v : spec["volumes"]) {
    if (v["name"].as<std::string>() == volume) {
      EXPECT_EQ(v["hostPath"]["path"].as<std::string>(""), dir) << "volume " << volume;
    }
  }
}

// Every fabric_* name in the alerts and the dashboard is a family the tools document.
TEST(DeployManifests, AlertsAndDashboardUseOnlyDocumentedMetrics) {
  std::string documented = read_text(std::string(FABRIC_SOURCE_DIR) + "/exporters/README.md") +
                           read_text(std::string(FABRIC_SOURCE_DIR) + "/nccltest/README.md");
  std::set<std::string> used;
  const std::regex name(R"(\bfabric_[a-z0-9_]+)");
  for (const char* file : {"/prometheus/rules.yaml", "/grafana/fabrickit-dashboard.json"}) {
    std::string text = read_text(kDeploy + file);
    for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it)
      used.insert(it->str());
  }
  ASSERT_GE(used.size(), 10u);
  for (const auto& metric : used) {
    EXPECT_NE(documented.find("`" + metric), std::string::npos)
        << metric << " is used in deploy/ but documented by neither tool";
  }
}

std::map<std::string, std::string> env_of(const YAML::Node& container) {
  std::map<std::string, std::string> env;
  for (const auto& e : container["env"])
    env[e["name"].as<std::string>()] = e["value"].as<std::string>("");
  return env;
}

// The volume mounted at `path` in `container`, looked up in the pod spec's volumes.
YAML::Node volume_at(const YAML::Node& spec, const YAML::Node& container, const std::string& path) {
  for (const auto& m : container["volumeMounts"]) {
    if (m["mountPath"].as<std::string>() != path) continue;
    for (const auto& v : spec["volumes"]) {
      if (v["name"].as<std::string>() == m["name"].as<std::string>()) return v;
    }
  }
  return {};
}

// What mpi-operator's own nccl-tests example does for a launcher running mpirun as root and
// workers running sshd with several ranks each.
TEST(DeployManifests, TheMpiJobCanStart) {
  YAML::Node job = object_named("MPIJob", "nccltest");
  ASSERT_TRUE(job);
  YAML::Node launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"];
  YAML::Node worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"];
  ASSERT_TRUE(launcher && worker);
  const YAML::Node mpirun = launcher["containers"][0];
  ASSERT_EQ(mpirun["command"][0].as<std::string>(), "mpirun");
  auto env = env_of(mpirun);
  EXPECT_EQ(env["OMPI_ALLOW_RUN_AS_ROOT"], "1") << "mpirun refuses to run as root";
  EXPECT_EQ(env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"], "1") << "mpirun refuses to run as root";

  const YAML::Node sshd = worker["containers"][0];
  std::string script;
  for (const auto& part : sshd["args"])
    script += part.as<std::string>() + " ";
  const auto privsep = script.find("/run/sshd");
  const auto start = script.find("/usr/sbin/sshd");
  ASSERT_NE(start, std::string::npos) << script;
  EXPECT_TRUE(privsep != std::string::npos && privsep < start)
      << "sshd needs /run/sshd, which the image lacks: " << script;

  ASSERT_GT(job["spec"]["slotsPerWorker"].as<int>(), 1);
  YAML::Node shm = volume_at(worker, sshd, "/dev/shm");
  ASSERT_TRUE(shm) << "ranks of a worker share /dev/shm, 64 MiB without a volume";
  EXPECT_EQ(shm["emptyDir"]["medium"].as<std::string>(""), "Memory");
}

// Two ranks on one node would measure NVLink or shared memory instead of the fabric.
TEST(DeployManifests, TheIndexedJobPutsOnePodOnEachNode) {
  YAML::Node job = object_named("Job", "nccltest");
  ASSERT_TRUE(job);
  YAML::Node tmpl = job["spec"]["template"];
  bool spread = false;
  for (const auto& term : tmpl["spec"]["affinity"]["podAntiAffinity"]
                              ["requiredDuringSchedulingIgnoredDuringExecution"]) {
    if (term["topologyKey"].as<std::string>("") != "kubernetes.io/hostname") continue;
    bool selects_own_pods = term["labelSelector"]["matchLabels"].size() > 0;
    for (const auto& label : term["labelSelector"]["matchLabels"]) {
      selects_own_pods &= tmpl["metadata"]["labels"][label.first.as<std::string>()].as<std::string>(
                              "") == label.second.as<std::string>();
    }
    spread |= selects_own_pods;
  }
  EXPECT_TRUE(spread) << "no required anti-affinity on the hostname against the job's own pods";
}

// Without the token, whoever reaches rank 0's port first takes a rank and reads the NCCL id.
TEST(DeployManifests, TheIndexedJobsRanksProveTheyHoldTheJobsToken) {
  YAML::Node job = object_named("Job", "nccltest");
  ASSERT_TRUE(job);
  YAML::Node spec = job["spec"]["template"]["spec"];
  const YAML::Node rank = spec["containers"][0];
  const std::string token_file = env_of(rank)["FABRIC_NCCLTEST_TOKEN_FILE"];
  ASSERT_FALSE(token_file.empty()) << "the ranks run without the job's token";
  const std::string dir = fs::path(token_file).parent_path().string();
  YAML::Node volume = volume_at(spec, rank, dir);
  ASSERT_TRUE(volume) << token_file << " is not on a volume";
  EXPECT_TRUE(volume["secret"]["secretName"]) << "the token is not a Secret";
  bool read_only = false;
  for (const auto& mount : rank["volumeMounts"]) {
    if (mount["mountPath"].as<std::string>() == dir) read_only = mount["readOnly"].as<bool>(false);
  }
  EXPECT_TRUE(read_only) << "the token's mount is writable";
}

// RoCE pods run only where the lossless profile was applied, and on the netdev it was applied to.
TEST(DeployManifests, RocePodsGoWhereTheProfileIsApplied) {
  auto profile = pfc::parse_profile(config_map_value("pfc-profile.yaml"), "pfc-profile.yaml");
  ASSERT_TRUE(profile.ok());
  int networks = 0;
  for (const auto& [file, object] : kubernetes_objects()) {
    if (object["kind"].as<std::string>() == "NetworkAttachmentDefinition") {
      YAML::Node config = YAML::Load(object["spec"]["config"].as<std::string>());
      EXPECT_FALSE(config["rdmaDevice"]) << file << ": an RDMA device index differs by node";
      if (config["master"]) {
        const std::string master = config["master"].as<std::string>();
        EXPECT_NE(std::find(profile->devices.begin(), profile->devices.end(), master),
                  profile->devices.end())
            << file << ": parent " << master << " is not a netdev the PFC profile applies to";
      }
      ++networks;
    }
    for (const auto& spec : pod_specs(object)) {
      bool attached = false;
      for (const auto& c : containers_of(spec)) {
        for (const auto& r : c["resources"]["limits"])
          attached |= r.first.as<std::string>().rfind("rdma/", 0) == 0;
      }
      if (!attached || spec["hostNetwork"].as<bool>(false)) continue;
      EXPECT_EQ(
          spec["nodeSelector"]["feature.node.kubernetes.io/fabrickit-pfc-applied"].as<std::string>(
              ""),
          "true")
          << file << ": a RoCE pod may land on a node whose PFC profile is not applied";
    }
  }
  EXPECT_EQ(networks, 3);
}

// Every alert tells the on-call what happened and where to read on: a summary, a description,
// and a runbook that exists in this repository; and rules_test.yaml makes each one fire.
TEST(DeployManifests, EveryAlertHasADescriptionARunbookAndAFiringTest) {
  YAML::Node rules = YAML::LoadFile(kDeploy + "/prometheus/rules.yaml");
  std::set<std::string> alerts;
  for (const auto& group : rules["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (!rule["alert"]) continue;
      const std::string alert = rule["alert"].as<std::string>();
      alerts.insert(alert);
      YAML::Node annotations = rule["annotations"];
      EXPECT_FALSE(annotations["summary"].as<std::string>("").empty()) << alert;
      EXPECT_FALSE(annotations["description"].as<std::string>("").empty()) << alert;
      const std::string runbook = annotations["runbook_url"].as<std::string>("");
      EXPECT_EQ(runbook, "docs/runbooks/" + alert + ".md") << alert;
      EXPECT_TRUE(fs::is_regular_file(std::string(FABRIC_SOURCE_DIR) + "/" + runbook))
          << alert << ": no runbook at " << runbook;
    }
  }
  ASSERT_GE(alerts.size(), 10u);

  std::set<std::string> fired;
  YAML::Node tests = YAML::LoadFile(kDeploy + "/prometheus/rules_test.yaml");
  for (const auto& test : tests["tests"]) {
    for (const auto& check : test["alert_rule_test"]) {
      if (check["exp_alerts"].size() > 0) fired.insert(check["alertname"].as<std::string>());
    }
  }
  for (const auto& alert : alerts) {
    EXPECT_TRUE(fired.count(alert)) << alert << " never fires in rules_test.yaml";
  }
}

// The operator's target labels of the exporter's own pod would change at every rollout and
// shadow the accounting's namespace and pod; honoured labels would let a textfile set node.
TEST(DeployManifests, ScrapedSeriesKeepTheirNodeAndSurviveARollout) {
  YAML::Node monitor = object_in("prometheus/servicemonitor.yaml", "ServiceMonitor");
  ASSERT_TRUE(monitor);
  ASSERT_GT(monitor["spec"]["endpoints"].size(), 0u);
  for (const auto& endpoint : monitor["spec"]["endpoints"]) {
    EXPECT_FALSE(endpoint["honorLabels"].as<bool>(false)) << "a textfile could set node";
    std::set<std::string> dropped;
    for (const auto& r : endpoint["relabelings"]) {
      if (r["action"].as<std::string>("") != "labeldrop") continue;
      const std::regex regex(r["regex"].as<std::string>());
      for (const char* label : {"pod", "container", "namespace"}) {
        if (std::regex_match(label, regex)) dropped.insert(label);
      }
    }
    EXPECT_EQ(dropped.size(), 3u) << "the exporter pod's own labels are kept";
  }
  YAML::Node scrape = YAML::LoadFile(kDeploy + "/prometheus/scrape.yaml");
  for (const auto& job : scrape["scrape_configs"]) {
    EXPECT_FALSE(job["honor_labels"].as<bool>(false)) << "a textfile could set node";
    for (const auto& r : job["relabel_configs"]) {
      EXPECT_NE(r["action"].as<std::string>(""), "labelmap") << "pod labels copied to series";
    }
  }
}

} // namespace
} // namespace fabric::deploy_test
