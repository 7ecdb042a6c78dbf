#include <algorithm>
#include <cstring>
#include <ostream>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "exporters/config.h"
#include "exporters/exporter.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

TEST(ExporterConfig, AnEmptyFileIsTheDefaults) {
  auto config = parse_config("", "empty.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->http.listen, ":10900");
  EXPECT_TRUE(config->rdma.enabled);
  EXPECT_TRUE(config->pfc.enabled);
  EXPECT_TRUE(config->dcb.enabled);
  EXPECT_FALSE(config->textfile.enabled);
  EXPECT_FALSE(config->accounting.enabled);
  EXPECT_EQ(config->accounting.mark_mask, 0x3000u);
}

TEST(ExporterConfig, EverySectionParses) {
  auto config = parse_config(R"(
http:
  listen: "127.0.0.1:9999"
  threads: 4
  request_timeout: 3s
sysfs_root: /host/sys
collectors:
  rdma:
    devices: [mlx5_0, mlx5_1]
    timeout: 500ms
    max_series: 50
  pfc:
    netdevs: [ens1f0np0]
  dcb:
    enabled: false
  textfile:
    directory: /var/lib/fabric/textfile
    max_age: 2m
    max_file_size: 64K
  accounting:
    backend: legacy
    mark_mask: 0x7000
    reconcile_interval: 30s
    cni_state_dir: /run/cni
    pod_records_dir: /run/pods
    classes:
      - name: parameter_plane
        networks: [10.10.0.0/16]
      - name: cluster
        networks: [10.0.0.0/8, "fd00::/8"]
)",
                             "full.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->http.listen, "127.0.0.1:9999");
  EXPECT_EQ(config->http.threads, 4u);
  EXPECT_EQ(config->http.request_timeout, std::chrono::seconds(3));
  EXPECT_EQ(config->sysfs_root, "/host/sys");
  EXPECT_EQ(config->rdma.devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(config->rdma.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(config->rdma.max_series, 50u);
  EXPECT_EQ(config->pfc.netdevs, std::vector<std::string>{"ens1f0np0"});
  EXPECT_FALSE(config->dcb.enabled);
  EXPECT_TRUE(config->textfile.enabled);
  EXPECT_EQ(config->textfile.max_age, std::chrono::seconds(120));
  EXPECT_EQ(config->textfile.max_file_size, 65536u);
  EXPECT_TRUE(config->accounting.enabled);
  EXPECT_EQ(config->accounting.backend, Backend::kLegacy);
  EXPECT_EQ(config->accounting.mark_mask, 0x7000u);
  ASSERT_EQ(config->accounting.classes.size(), 2u);
  EXPECT_EQ(config->accounting.classes[1].networks[1].text(), "fd00::/8");
  EXPECT_EQ(class_names(config->accounting),
            (std::vector<std::string>{"external", "parameter_plane", "cluster"}));
}

struct BadConfig {
  const char* yaml;
  const char* message;
};

// Test names show the key and line the error names ("http.listen_(line_2)"), not bytes.
void PrintTo(const BadConfig& c, std::ostream* os) {
  std::string where(c.message, std::strcspn(c.message, ":"));
  std::replace(where.begin(), where.end(), ' ', '_');
  *os << where;
}

class ExporterConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ExporterConfigErrors, NameTheKeyAndTheLine) {
  auto config = parse_config(GetParam().yaml, "");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code(), ErrorCode::kInvalidConfig) << config.error().message();
  EXPECT_EQ(config.error().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExporterConfigErrors,
    ::testing::Values(
        BadConfig{"htp: {}\n",
                  "htp (line 1): unknown key 'htp'; allowed here: http, sysfs_root, collectors"},
        BadConfig{"http:\n  listen: localhost:80\n",
                  "http.listen (line 2): 'localhost' is not an IPv4 address (names are not "
                  "resolved)"},
        BadConfig{"http:\n  threads: 1\n",
                  "http.threads (line 2): thread count 1 is out of range 2-256"},
        BadConfig{"collectors:\n  rdma:\n    timeout: soon\n",
                  "collectors.rdma.timeout (line 3): invalid value 'soon' (expected a duration "
                  "such as 500ms, 10s or 2m)"},
        BadConfig{"collectors:\n  pfc:\n    netdevs: [eth0, eth0]\n",
                  "collectors.pfc.netdevs[1] (line 3): netdev name eth0 is listed twice"},
        BadConfig{"collectors:\n  textfile:\n    max_age: 1m\n",
                  "collectors.textfile (line 2): textfile needs a directory (or enabled: false)"},
        BadConfig{"collectors:\n  nccl:\n    retain_exited: 1m\n",
                  "collectors.nccl (line 2): nccl needs a directory (or enabled: false)"},
        BadConfig{"collectors:\n  nccl:\n    directory: /run/nccl\n    retain_exited: soon\n",
                  "collectors.nccl.retain_exited (line 4): invalid value 'soon' (expected a "
                  "duration such as 500ms, 10s or 2m)"},
        BadConfig{"collectors:\n  accounting:\n    classes:\n      - name: cluster\n        "
                  "networks: [10.0.0.1/8]\n",
                  "collectors.accounting.classes[0].networks[0] (line 5): has bits set after the "
                  "prefix (did you mean a /32 host?)"},
        BadConfig{"collectors:\n  accounting:\n    classes:\n      - name: external\n        "
                  "networks: [10.0.0.0/8]\n",
                  "collectors.accounting.classes[0].name (line 4): 'external' is the class of "
                  "every address no class names; it cannot be configured"},
        BadConfig{"collectors:\n  accounting:\n    mark_mask: 0x1000\n    classes:\n"
                  "      - {name: a, networks: [10.0.0.0/8]}\n"
                  "      - {name: b, networks: [11.0.0.0/8]}\n",
                  "collectors.accounting.classes (line 4): 2 classes and external need 3 mark "
                  "values; the mark mask has 1 bit(s), 2 values"},
        BadConfig{"collectors:\n  accounting:\n    backend: iptables\n    classes: []\n",
                  "collectors.accounting.backend (line 3): must be auto, legacy or nft, not "
                  "'iptables'"},
        BadConfig{"collectors:\n  accounting:\n    cni_state_dir: var/lib\n",
                  "collectors.accounting.cni_state_dir (line 3): must be an absolute path"},
        BadConfig{"collectors:\n  rdma:\n    enabled: true\n    enabled: false\n",
                  "collectors.rdma.enabled (line 4): 'enabled' is given twice (first on line 3)"}));

// Three mistakes in three sections are all named at once, each with its key and line.
TEST(ExporterConfig, ErrorsOfSeveralSectionsComeTogether) {
  auto config = parse_config("http:\n  threads: 1\ncollectors:\n  rdma:\n    timeout: soon\n"
                             "  textfile:\n    max_age: 1m\n",
                             "");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_EQ(config.error().message(),
            "3 errors:\n"
            "  http.threads (line 2): thread count 1 is out of range 2-256\n"
            "  collectors.rdma.timeout (line 5): invalid value 'soon' (expected a duration such "
            "as 500ms, 10s or 2m)\n"
            "  collectors.textfile (line 6): textfile needs a directory (or enabled: false)");
}

TEST(ExporterConfig, SyntaxErrorsNameLineAndColumn) {
  auto config = parse_config("http: [unclosed\n", "bad.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code(), ErrorCode::kDecode);
  EXPECT_NE(config.error().message().find("bad.yaml"), std::string::npos);
  EXPECT_NE(config.error().message().find("line 2"), std::string::npos) << config.error().message();
}

TEST(ExporterReload, ABadConfigurationKeepsTheRunningOne) {
  char dir[] = "/tmp/fabric-exporter-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config.yaml";
  const std::string sysfs = FABRIC_TEST_DATA_DIR "/exporter/sysfs/rxe";
  ASSERT_TRUE(write_file_atomic(path, "sysfs_root: " + sysfs +
                                          "\ncollectors: {pfc: {enabled: false}, dcb: "
                                          "{enabled: false}}\n")
                  .ok());
  auto config = load_config(path);
  ASSERT_TRUE(config.ok()) << config.error().message();
  Exporter exporter(*config);
  auto before = exporter.scrape();
  EXPECT_EQ(testing::value(before, "fabric_exporter_config_last_reload_successful", {}), 1);
  ASSERT_TRUE(
      testing::value(before, "fabric_rdma_port_state", {{"device", "rxe0"}, {"port", "1"}}));

  ASSERT_TRUE(write_file_atomic(path, "collectors: {rdma: {timeout: never}}\n").ok());
  auto reloaded = exporter.reload(path);
  ASSERT_FALSE(reloaded.ok());
  EXPECT_NE(reloaded.error().message().find("collectors.rdma.timeout (line 1)"), std::string::npos)
      << reloaded.error().message();
  auto after = exporter.scrape();
  EXPECT_EQ(testing::value(after, "fabric_exporter_config_last_reload_successful", {}), 0);
  EXPECT_TRUE(testing::value(after, "fabric_rdma_port_state", {{"device", "rxe0"}, {"port", "1"}}))
      << "the previous configuration still reads rxe0";

  ASSERT_TRUE(write_file_atomic(path, "sysfs_root: " + sysfs +
                                          "\ncollectors: {rdma: {enabled: "
                                          "false}, pfc: {enabled: false}, "
                                          "dcb: {enabled: false}}\n")
                  .ok());
  ASSERT_TRUE(exporter.reload(path).ok());
  after = exporter.scrape();
  EXPECT_EQ(testing::value(after, "fabric_exporter_config_last_reload_successful", {}), 1);
  EXPECT_FALSE(
      testing::value(after, "fabric_rdma_port_state", {{"device", "rxe0"}, {"port", "1"}}));
  std::remove(path.c_str());
  rmdir(dir);
}

} // namespace
} // namespace fabric::exporters
