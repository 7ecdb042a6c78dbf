// The NetworkAttachmentDefinitions in deploy/cni are what operators copy: their configs
// must pass the plugin's own validation, for ADD and for DEL.
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "cni/config.h"

namespace fabric::cni {
namespace {

class DeployExample : public ::testing::TestWithParam<const char*> {};

TEST_P(DeployExample, ConfigPassesValidation) {
  std::string path = std::string(FABRIC_SOURCE_DIR) + "/deploy/cni/" + GetParam();
  YAML::Node nad = YAML::LoadFile(path);
  ASSERT_EQ(nad["kind"].as<std::string>(), "NetworkAttachmentDefinition");
  std::string config = nad["spec"]["config"].as<std::string>();
  // For a network with a resourceName annotation, Multus adds the allocated device's PCI
  // address as top-level "deviceID"; such an example names no parent of its own until then.
  if (nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]) {
    EXPECT_EQ(config.find("\"deviceID\""), std::string::npos) << path << ": Multus sets it";
    auto brace = config.rfind('}');
    config.insert(brace, ", \"deviceID\": \"0000:3b:00.2\"");
  }
  for (Command command : {Command::kAdd, Command::kDel}) {
    auto conf = parse_netconf(config, command);
    ASSERT_TRUE(conf.ok()) << path << ": " << conf.error().message();
    EXPECT_EQ(conf->type, "fabric-cni");
    EXPECT_EQ(conf->name, nad["metadata"]["name"].as<std::string>());
    if (nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]) {
      EXPECT_EQ(effective_device_id(*conf).value_or(""), "0000:3b:00.2") << path;
    }
    // Multus has no deviceID capability: declared, it would never be filled.
    EXPECT_EQ(config.find("\"deviceID\": true"), std::string::npos) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Cni, DeployExample,
                         ::testing::Values("roce-shared.yaml", "roce-shared-host-local.yaml",
                                           "roce-exclusive.yaml"));

} // namespace
} // namespace fabric::cni
