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

namespace fabric {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : std::string();
}

const std::string kDeploy = std::string(FABRIC_SOURCE_DIR) + "/deploy";

std::vector<fs::path> files_under(const std::string& dir, const std::string& extension) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every Kubernetes object in deploy/kubernetes and deploy/jobs, with the file it came from.
std::vector<std::pair<std::string, YAML::Node>> kubernetes_objects() {
  std::vector<std::pair<std::string, YAML::Node>> objects;
  for (const char* dir : {"kubernetes", "jobs", "cni"}) {
    for (const auto& path : files_under(kDeploy + "/" + dir, ".yaml")) {
      for (const auto& doc : YAML::LoadAllFromFile(path.string())) {
        if (doc.IsMap()) objects.emplace_back(path.filename().string(), doc);
      }
    }
  }
  return objects;
}

// The pod templates of workloads: DaemonSet and Job templates, and every MPIJob replica's.
std::vector<YAML::Node> pod_specs(const YAML::Node& object) {
  std::vector<YAML::Node> specs;
  const std::string kind = object["kind"].as<std::string>();
  if (kind == "DaemonSet" || kind == "Job") specs.push_back(object["spec"]["template"]["spec"]);
  if (kind == "MPIJob") {
    for (const auto& replica : object["spec"]["mpiReplicaSpecs"])
      specs.push_back(replica.second["template"]["spec"]);
  }
  return specs;
}

std::vector<YAML::Node> containers_of(const YAML::Node& spec) {
  std::vector<YAML::Node> out;
  for (const char* key : {"initContainers", "containers"}) {
    if (spec[key]) {
      for (const auto& c : spec[key])
        out.push_back(c);
    }
  }
  return out;
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
  for (const auto& [file, object] : kubernetes_objects()) {
    if (object["kind"].as<std::string>() == "DaemonSet") return object;
  }
  return {};
}

TEST(DeployManifests, TheNodeDaemonSetHasOnlyTheCapabilitiesAndMountsItNeeds) {
  YAML::Node ds = node_daemonset();
  ASSERT_TRUE(ds) << "no DaemonSet in deploy/kubernetes";
  YAML::Node spec = ds["spec"]["template"]["spec"];
  EXPECT_TRUE(spec["hostNetwork"].as<bool>());
  EXPECT_TRUE(spec["hostPID"] && spec["hostPID"].as<bool>())
      << "without it no NCCL profiler file is bound to its process and pod";
  EXPECT_TRUE(spec["nodeSelector"]) << "runs only on labelled RoCE nodes";
  bool tolerates_gpu = false;
  for (const auto& t : spec["tolerations"])
    tolerates_gpu |= t["key"].as<std::string>() == "nvidia.com/gpu";
  EXPECT_TRUE(tolerates_gpu);

  const std::map<std::string, std::set<std::string>> capabilities = {
      {"install-cni", {}},
      {"apply-pfc", {"NET_ADMIN"}},
      {"exporter", {"NET_ADMIN", "NET_RAW"}},
      {"probe-agent", {"IPC_LOCK"}}};
  // Volume -> host path; none may be / or a parent of the host's disks.
  std::map<std::string, std::string> host_paths;
  for (const auto& v : spec["volumes"]) {
    if (v["hostPath"])
      host_paths[v["name"].as<std::string>()] = v["hostPath"]["path"].as<std::string>();
  }
  const std::set<std::string> allowed_host_paths = {
      "/opt/cni/bin",     "/sys",  "/var/lib/cni/fabric", "/var/lib/fabric/textfile",
      "/run/fabric/nccl", "/proc", "/var/log/pods",       "/run/xtables.lock"};
  for (const auto& [name, path] : host_paths) {
    EXPECT_TRUE(allowed_host_paths.count(path))
        << "hostPath " << path << " (volume " << name << ")";
  }

  std::set<std::string> seen;
  for (const auto& c : containers_of(spec)) {
    const std::string name = c["name"].as<std::string>();
    seen.insert(name);
    ASSERT_TRUE(capabilities.count(name)) << "container " << name << " is not in the list";
    YAML::Node sc = c["securityContext"];
    ASSERT_TRUE(sc) << name;
    EXPECT_FALSE(sc["privileged"] && sc["privileged"].as<bool>()) << name;
    EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>()) << name;
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
      if (host_paths[volume] == "/proc") {
        EXPECT_TRUE(m["readOnly"] && m["readOnly"].as<bool>()) << name << " mounts /proc writable";
      }
      if (host_paths[volume] == "/sys" && name != "apply-pfc") {
        EXPECT_TRUE(m["readOnly"] && m["readOnly"].as<bool>())
            << name << " mounts the host's /sys writable; only apply-pfc writes RDMA knobs";
      }
    }
  }
  EXPECT_EQ(seen.size(), capabilities.size());
  for (const auto& c : spec["containers"]) {
    EXPECT_TRUE(c["livenessProbe"] && c["readinessProbe"]) << c["name"];
  }
}

TEST(DeployManifests, TheCniPluginIsInstalledByCopyThenRename) {
  YAML::Node spec = node_daemonset()["spec"]["template"]["spec"];
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

std::string config_map_value(const std::string& key) {
  for (const auto& [file, object] : kubernetes_objects()) {
    if (object["kind"].as<std::string>() == "ConfigMap" && object["data"][key])
      return object["data"][key].as<std::string>();
  }
  return {};
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

} // namespace
} // namespace fabric
