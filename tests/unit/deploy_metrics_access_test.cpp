// Who can reach fabric-exporter, checked on deploy/ as an operator applies it: the exporter
// listens on the node's loopback only; kube-rbac-proxy, the one way in from the network,
// serves TLS on the node's address and forwards only /metrics, to exactly the exporter's
// address; it is the only container anywhere in deploy/ holding a service-account token; the
// ClusterRoles grant it its two reviews and Prometheus `get` on /metrics, nothing more; and
// both scrape configurations ask the proxy over https with Prometheus' token.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/unit/deploy_manifests.h"

// In deploy_test, beside the helpers of deploy_manifests.h.
namespace fabric::deploy_test {
namespace {

const std::string kProxy = "kube-rbac-proxy";
const std::string kLoopback = "127.0.0.1:";
// Where in-cluster clients, kube-rbac-proxy and Prometheus among them, read their token.
const std::string kTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount";

YAML::Node node_pod_spec() {
  return object_named("DaemonSet", "fabrickit-node")["spec"]["template"]["spec"];
}

YAML::Node container_named(const YAML::Node& spec, const std::string& name) {
  for (const auto& c : containers_of(spec)) {
    if (c["name"].as<std::string>() == name) return c;
  }
  return {};
}

// The values of `--flag=VALUE` among a container's args.
std::vector<std::string> flag_values(const YAML::Node& container, const std::string& flag) {
  std::vector<std::string> values;
  for (const auto& arg : container["args"]) {
    const std::string a = arg.as<std::string>();
    if (a.rfind(flag + "=", 0) == 0) values.push_back(a.substr(flag.size() + 1));
  }
  return values;
}

std::string exporter_listen() {
  return YAML::Load(config_map_value("exporter.yaml"))["http"]["listen"].as<std::string>("");
}

// The port of the proxy's container port named `https`; 0 when there is none.
int proxy_https_port() {
  for (const auto& p : container_named(node_pod_spec(), kProxy)["ports"]) {
    if (p["name"].as<std::string>("") == "https") return p["containerPort"].as<int>();
  }
  return 0;
}

TEST(DeployMetricsAccess, TheExporterListensOnTheNodesLoopbackOnly) {
  const std::string listen = exporter_listen();
  ASSERT_EQ(listen.rfind(kLoopback, 0), 0u)
      << "http.listen " << listen << " is reachable from outside the node (host network)";
  const std::string port = listen.substr(kLoopback.size());
  YAML::Node exporter = container_named(node_pod_spec(), "exporter");
  ASSERT_TRUE(exporter);
  for (const auto& arg : exporter["args"]) {
    EXPECT_NE(arg.as<std::string>().rfind("--listen", 0), 0u)
        << "a flag overrides the configuration's address";
  }
  EXPECT_FALSE(exporter["ports"])
      << "a containerPort on the host network declares a port on the node's address";
  // The kubelet probes a host-network pod from the node, so loopback reaches it.
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    YAML::Node get = exporter[probe]["httpGet"];
    ASSERT_TRUE(get) << probe;
    EXPECT_EQ(get["host"].as<std::string>(""), "127.0.0.1") << probe;
    EXPECT_EQ(get["port"].as<std::string>(""), port) << probe;
  }
}

TEST(DeployMetricsAccess, TheProxyServesTlsOnTheNodesAddressAndForwardsOnlyMetrics) {
  YAML::Node proxy = container_named(node_pod_spec(), kProxy);
  ASSERT_TRUE(proxy) << "no " << kProxy << " in front of the exporter";
  EXPECT_EQ(proxy["image"].as<std::string>("").rfind("quay.io/brancz/kube-rbac-proxy:v", 0), 0u);
  EXPECT_EQ(flag_values(proxy, "--upstream"),
            std::vector<std::string>{"http://" + exporter_listen() + "/"});
  EXPECT_EQ(flag_values(proxy, "--allow-paths"), std::vector<std::string>{"/metrics"});
  for (const char* open : {"--insecure-listen-address", "--ignore-paths"}) {
    EXPECT_TRUE(flag_values(proxy, open).empty()) << open << " lets requests past the checks";
  }
  // TLS on the node's address (the pod's, on the host network), at the port scraped.
  const int port = proxy_https_port();
  ASSERT_GT(port, 0) << "no container port named https";
  EXPECT_EQ(flag_values(proxy, "--secure-listen-address"),
            std::vector<std::string>{"[$(IP)]:" + std::to_string(port)});
  std::string ip_field;
  for (const auto& e : proxy["env"]) {
    if (e["name"].as<std::string>() == "IP")
      ip_field = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>("");
  }
  EXPECT_EQ(ip_field, "status.podIP");

  YAML::Node sc = proxy["securityContext"];
  EXPECT_TRUE(sc["runAsNonRoot"].as<bool>(false));
  EXPECT_GT(sc["runAsUser"].as<int>(0), 0);
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
}

// A token is mounted by automounting (a pod without automountServiceAccountToken: false) or
// by a projected volume with a serviceAccountToken source.
TEST(DeployMetricsAccess, OnlyTheProxyHoldsAServiceAccountToken) {
  std::set<std::string> holders;
  int pods = 0;
  for (const auto& [file, object] : kubernetes_objects()) {
    for (const auto& spec : pod_specs(object)) {
      ++pods;
      const std::string pod = object["metadata"]["name"].as<std::string>();
      EXPECT_FALSE(spec["automountServiceAccountToken"].as<bool>(true))
          << file << ": " << pod << " mounts a token into every container";
      std::set<std::string> token_volumes;
      for (const auto& v : spec["volumes"]) {
        if (!v["projected"]) continue;
        for (const auto& source : v["projected"]["sources"]) {
          if (source["serviceAccountToken"]) token_volumes.insert(v["name"].as<std::string>());
        }
      }
      for (const auto& c : containers_of(spec)) {
        for (const auto& m : c["volumeMounts"]) {
          if (token_volumes.count(m["name"].as<std::string>()) ||
              m["mountPath"].as<std::string>().rfind(kTokenDir, 0) == 0)
            holders.insert(pod + "/" + c["name"].as<std::string>());
        }
      }
    }
  }
  EXPECT_GE(pods, 5);
  EXPECT_EQ(holders, std::set<std::string>{"fabrickit-node/" + kProxy});
  // And where in-cluster configuration looks for it.
  for (const auto& m : container_named(node_pod_spec(), kProxy)["volumeMounts"]) {
    if (m["name"].as<std::string>() == "kube-rbac-proxy-token") {
      EXPECT_EQ(m["mountPath"].as<std::string>(), kTokenDir);
      EXPECT_TRUE(m["readOnly"].as<bool>(false));
    }
  }
}

// A rule as "GROUP/RESOURCE VERB" or "URL VERB", one string per combination.
std::set<std::string> grants(const YAML::Node& role) {
  std::set<std::string> out;
  for (const auto& rule : role["rules"]) {
    std::vector<std::string> targets;
    for (const auto& url : rule["nonResourceURLs"])
      targets.push_back(url.as<std::string>());
    for (const auto& group : rule["apiGroups"]) {
      for (const auto& resource : rule["resources"])
        targets.push_back(group.as<std::string>() + "/" + resource.as<std::string>());
    }
    for (const auto& target : targets) {
      for (const auto& verb : rule["verbs"])
        out.insert(target + " " + verb.as<std::string>());
    }
  }
  return out;
}

TEST(DeployMetricsAccess, TheRolesGrantOnlyTheReviewsGettingMetricsAndFindingTargets) {
  YAML::Node proxy_role = object_named("ClusterRole", "fabrickit-kube-rbac-proxy");
  ASSERT_TRUE(proxy_role);
  EXPECT_EQ(grants(proxy_role),
            (std::set<std::string>{"authentication.k8s.io/tokenreviews create",
                                   "authorization.k8s.io/subjectaccessreviews create"}));
  YAML::Node reader = object_in("prometheus/rbac.yaml", "ClusterRole");
  ASSERT_TRUE(reader);
  EXPECT_EQ(grants(reader), std::set<std::string>{"/metrics get"});
  YAML::Node discovery = object_in("prometheus/rbac.yaml", "Role");
  ASSERT_TRUE(discovery);
  EXPECT_EQ(discovery["metadata"]["namespace"].as<std::string>(), "fabrickit");
  std::set<std::string> reads;
  for (const char* resource :
       {"/pods", "/services", "/endpoints", "discovery.k8s.io/endpointslices"}) {
    for (const char* verb : {" get", " list", " watch"})
      reads.insert(resource + std::string(verb));
  }
  EXPECT_EQ(grants(discovery), reads) << "Prometheus' discovery reads more than its targets";

  // The proxy's role is bound to the service account the node pod runs as, which mounts
  // no token by itself.
  YAML::Node spec = node_pod_spec();
  const std::string account = spec["serviceAccountName"].as<std::string>("");
  YAML::Node service_account = object_named("ServiceAccount", account);
  ASSERT_TRUE(service_account) << "no ServiceAccount " << account;
  EXPECT_FALSE(service_account["automountServiceAccountToken"].as<bool>(true));
  YAML::Node binding = object_named("ClusterRoleBinding", "fabrickit-kube-rbac-proxy");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "fabrickit-kube-rbac-proxy");
  ASSERT_EQ(binding["subjects"].size(), 1u);
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), account);
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(),
            object_named("DaemonSet", "fabrickit-node")["metadata"]["namespace"].as<std::string>());

  // No other role anywhere in deploy/ that could grant more.
  std::set<std::string> roles;
  for (const auto& path : files_under(deploy_dir(), ".yaml")) {
    for (const auto& doc : YAML::LoadAllFromFile(path.string())) {
      const std::string kind = doc.IsMap() ? doc["kind"].as<std::string>("") : "";
      if (kind == "Role" || kind == "ClusterRole")
        roles.insert(kind + " " + doc["metadata"]["name"].as<std::string>());
    }
  }
  EXPECT_EQ(roles, (std::set<std::string>{"ClusterRole fabrickit-kube-rbac-proxy",
                                          "ClusterRole fabrickit-metrics-reader",
                                          "Role fabrickit-metrics-discovery"}));
}

TEST(DeployMetricsAccess, PrometheusScrapesTheProxyOverHttpsWithItsToken) {
  const std::string token = kTokenDir + "/token";
  YAML::Node scrape = YAML::LoadFile(deploy_dir() + "/prometheus/scrape.yaml");
  ASSERT_EQ(scrape["scrape_configs"].size(), 1u);
  YAML::Node job = scrape["scrape_configs"][0];
  EXPECT_EQ(job["scheme"].as<std::string>(""), "https");
  EXPECT_EQ(job["authorization"]["credentials_file"].as<std::string>(""), token);
  std::string kept;
  for (const auto& r : job["relabel_configs"]) {
    if (r["action"].as<std::string>("") == "keep") kept = r["regex"].as<std::string>("");
  }
  EXPECT_EQ(kept, "fabrickit;https") << "the target is not the proxy's port";

  YAML::Node service = object_in("prometheus/servicemonitor.yaml", "Service");
  ASSERT_TRUE(service);
  ASSERT_EQ(service["spec"]["ports"].size(), 1u);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"].as<std::string>(), "https");
  EXPECT_EQ(service["spec"]["ports"][0]["port"].as<int>(), proxy_https_port());
  YAML::Node labels =
      object_named("DaemonSet", "fabrickit-node")["spec"]["template"]["metadata"]["labels"];
  for (const auto& selector : service["spec"]["selector"]) {
    EXPECT_EQ(labels[selector.first.as<std::string>()].as<std::string>(""),
              selector.second.as<std::string>());
  }
  YAML::Node monitor = object_in("prometheus/servicemonitor.yaml", "ServiceMonitor");
  ASSERT_TRUE(monitor);
  for (const auto& endpoint : monitor["spec"]["endpoints"]) {
    EXPECT_EQ(endpoint["port"].as<std::string>(""), "https");
    EXPECT_EQ(endpoint["scheme"].as<std::string>(""), "https");
    EXPECT_EQ(endpoint["bearerTokenFile"].as<std::string>(""), token);
  }
}

} // namespace
} // namespace fabric::deploy_test
