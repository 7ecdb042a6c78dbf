// gpu tier: `fabric-probe topo --json` lists every GPU the CUDA runtime reports, at the PCI
// address the runtime gives, and places it in sysfs's PCIe hierarchy.
#include <gtest/gtest.h>

#include "common/cuda_runtime.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "libs/topology/pci_topology.h"
#include "tests/gpu/program_path.h"

namespace fabric {
namespace {

TEST(TopoGpu, EveryCudaDeviceIsListedAtItsPciAddress) {
  auto ids = cuda::pci_bus_ids();
  if (!ids.ok()) GTEST_SKIP() << ids.error().message();
  auto run = run_subprocess({FABRIC_GPU_PROGRAM(FABRIC_PROBE_BINARY), "topo", "--json"});
  ASSERT_TRUE(run.ok()) << run.error().message();
  ASSERT_EQ(run->exit_status, 0) << run->stderr_text;
  auto doc = json::parse(run->stdout_text, "topo --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  ASSERT_TRUE((*doc)["cuda"]["asked"].GetBool());
  ASSERT_TRUE((*doc)["cuda"]["devices"].IsArray()) << run->stdout_text;
  ASSERT_EQ((*doc)["cuda"]["devices"].Size(), ids->size());
  for (std::size_t i = 0; i < ids->size(); ++i) {
    auto address = topo::parse_pci_address((*ids)[i]);
    ASSERT_TRUE(address.ok()) << (*ids)[i];
    const rapidjson::Value* listed = nullptr;
    for (const auto& g : (*doc)["gpus"].GetArray()) {
      if (!g["cuda_index"].IsNull() && g["cuda_index"].GetInt() == static_cast<int>(i)) listed = &g;
    }
    ASSERT_NE(listed, nullptr) << "CUDA device " << i << " (" << (*ids)[i] << ") not listed";
    EXPECT_EQ((*listed)["pci_address"].GetString(), topo::to_string(*address));
    // Found in sysfs: on a host bridge, with a NUMA node the firmware gave or null.
    EXPECT_STREQ((*listed)["vendor_id"].GetString(), "0x10de");
    const auto& row = (*doc)["distances"][(*listed)["name"].GetString()];
    EXPECT_STREQ(row[(*listed)["name"].GetString()].GetString(), "X");
  }
}

} // namespace
} // namespace fabric
