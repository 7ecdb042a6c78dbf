// deploy/'s Kubernetes objects as the deploy unit tests read them (deploy_manifests.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace fabric::deploy_test {

// The repository's deploy/ directory.
std::string deploy_dir();

// Files under `dir` whose name ends in `extension`, sorted.
std::vector<std::filesystem::path> files_under(const std::string& dir,
                                               const std::string& extension);

// Every Kubernetes object in deploy/kubernetes, deploy/jobs and deploy/cni, with its file name.
std::vector<std::pair<std::string, YAML::Node>> kubernetes_objects();

// The Kubernetes objects (maps with a kind) of one file under deploy/, e.g. "prometheus/rbac.yaml".
std::vector<YAML::Node> objects_in(const std::string& file);
// The first of them of that kind; a null node when there is none.
YAML::Node object_in(const std::string& file, const std::string& kind);

// The pod specs of a workload: a DaemonSet's or Job's template, every MPIJob replica's.
std::vector<YAML::Node> pod_specs(const YAML::Node& object);

// A pod spec's init containers, then its containers.
std::vector<YAML::Node> containers_of(const YAML::Node& spec);

// The object of kubernetes_objects() with that kind and name; a null node when there is none.
YAML::Node object_named(const std::string& kind, const std::string& name);

// A key of the ConfigMaps' data (pfc-profile.yaml, exporter.yaml); empty when none has it.
std::string config_map_value(const std::string& key);

} // namespace fabric::deploy_test
