#include "tests/unit/deploy_manifests.h"

#include <algorithm>

namespace fabric::deploy_test {

namespace fs = std::filesystem;

std::string deploy_dir() {
  return std::string(FABRIC_SOURCE_DIR) + "/deploy";
}

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

std::vector<std::pair<std::string, YAML::Node>> kubernetes_objects() {
  std::vector<std::pair<std::string, YAML::Node>> objects;
  for (const char* dir : {"kubernetes", "jobs", "cni"}) {
    for (const auto& path : files_under(deploy_dir() + "/" + dir, ".yaml")) {
      for (const auto& doc : YAML::LoadAllFromFile(path.string())) {
        if (doc.IsMap()) objects.emplace_back(path.filename().string(), doc);
      }
    }
  }
  return objects;
}

std::vector<YAML::Node> objects_in(const std::string& file) {
  std::vector<YAML::Node> objects;
  for (const auto& doc : YAML::LoadAllFromFile(deploy_dir() + "/" + file)) {
    if (doc.IsMap() && doc["kind"]) objects.push_back(doc);
  }
  return objects;
}

YAML::Node object_in(const std::string& file, const std::string& kind) {
  for (const auto& object : objects_in(file)) {
    if (object["kind"].as<std::string>() == kind) return object;
  }
  return {};
}

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

YAML::Node object_named(const std::string& kind, const std::string& name) {
  for (const auto& [file, object] : kubernetes_objects()) {
    if (object["kind"].as<std::string>() == kind &&
        object["metadata"]["name"].as<std::string>() == name)
      return object;
  }
  return {};
}

std::string config_map_value(const std::string& key) {
  for (const auto& [file, object] : kubernetes_objects()) {
    if (object["kind"].as<std::string>() == "ConfigMap" && object["data"][key])
      return object["data"][key].as<std::string>();
  }
  return {};
}

} // namespace fabric::deploy_test
