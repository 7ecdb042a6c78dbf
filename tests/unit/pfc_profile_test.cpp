#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "pfc/profile.h"

namespace fabric::pfc {
namespace {

constexpr uint8_t kStrict = static_cast<uint8_t>(Tsa::kStrict);
constexpr uint8_t kEts = static_cast<uint8_t>(Tsa::kEts);
constexpr uint8_t kVendor = static_cast<uint8_t>(Tsa::kVendor);

// AppEntry sorts by selector, then priority, then protocol.
AppEntry app(AppSelector selector, uint16_t protocol, uint8_t priority) {
  return AppEntry{static_cast<uint8_t>(selector), priority, protocol};
}

// APP entries as text, so that a mismatch shows which entry differs.
std::string apps_text(const std::vector<AppEntry>& apps) {
  std::string text;
  for (const AppEntry& e : apps) {
    text += "{sel " + std::to_string(e.selector) + ", proto " + std::to_string(e.protocol) +
            " -> prio " + std::to_string(e.priority) + "} ";
  }
  return text;
}

// What deploy/pfc/roce-lossless.yaml asks for, field by field.
DesiredConfig roce_lossless() {
  DesiredConfig want;
  want.pfc_en = 1u << 3;
  want.ets_willing = false;
  want.prio_tc = PerPriority<uint8_t>{0, 0, 0, 3, 0, 0, 6, 0};
  want.tc_bw = PerTc<uint8_t>{50, 0, 0, 50, 0, 0, 0, 0};
  want.tc_tsa = PerTc<uint8_t>{kEts, kStrict, kStrict, kEts, kStrict, kStrict, kStrict, kStrict};
  want.apps = {app(AppSelector::kDscp, 26, 3), app(AppSelector::kDscp, 48, 6)};
  want.apps_exclusive = true;
  want.ecn_np = 1u << 3;
  want.ecn_rp = 1u << 3;
  want.cm_default_tos = 106;
  want.cm_default_roce_mode = "RoCE v2";
  want.rdma_traffic_class = 106;
  return want;
}

// DesiredConfig has no operator==; comparing field by field also names the field that differs.
void expect_same(const DesiredConfig& got, const DesiredConfig& want) {
  EXPECT_EQ(got.pfc_en, want.pfc_en);
  EXPECT_EQ(got.pfc_delay, want.pfc_delay);
  EXPECT_EQ(got.ets_willing, want.ets_willing);
  EXPECT_EQ(got.prio_tc, want.prio_tc);
  EXPECT_EQ(got.tc_bw, want.tc_bw);
  EXPECT_EQ(got.tc_tsa, want.tc_tsa);
  EXPECT_EQ(apps_text(got.apps), apps_text(want.apps));
  EXPECT_EQ(got.apps_exclusive, want.apps_exclusive);
  EXPECT_EQ(got.prio2buffer, want.prio2buffer);
  EXPECT_EQ(got.buffer_size, want.buffer_size);
  EXPECT_EQ(got.tc_maxrate, want.tc_maxrate);
  EXPECT_EQ(got.ecn_np, want.ecn_np);
  EXPECT_EQ(got.ecn_rp, want.ecn_rp);
  EXPECT_EQ(got.rdma_device, want.rdma_device);
  EXPECT_EQ(got.cm_default_tos, want.cm_default_tos);
  EXPECT_EQ(got.cm_default_roce_mode, want.cm_default_roce_mode);
  EXPECT_EQ(got.rdma_traffic_class, want.rdma_traffic_class);
}

// The message of the error that parsing `yaml` gives; fails the test if it parses, or if
// the error is not kInvalidConfig.
std::string config_error(const std::string& yaml) {
  auto profile = parse_profile(yaml, "");
  if (profile.ok()) {
    ADD_FAILURE() << "parsed, but should not have:\n" << yaml;
    return "";
  }
  EXPECT_EQ(profile.error().code(), ErrorCode::kInvalidConfig) << profile.error().message();
  return profile.error().message();
}

// yaml-cpp descends recursively but stops itself at 500 levels; the error must say so.
TEST(PfcProfile, DeepNestingIsAnErrorNotACrash) {
  for (const std::string& text :
       {std::string(1 << 20, '['), "pfc: " + std::string(100000, '{') + "a: 1}",
        std::string("ets:\n  tc_bw: ") + std::string(600, '[')}) {
    auto profile = parse_profile(text, "deep.yaml");
    ASSERT_FALSE(profile.ok());
    EXPECT_EQ(profile.error().code(), ErrorCode::kDecode);
    EXPECT_NE(profile.error().message().find("levels deep, the YAML parser's limit"),
              std::string::npos)
        << profile.error().message();
  }
}

TEST(PfcProfile, OnlyARegularFileOfBoundedSizeIsRead) {
  char dir_template[] = "/tmp/fabric-pfc-profile-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string big = dir + "/big.yaml", fifo = dir + "/fifo.yaml";
  {
    std::FILE* f = std::fopen(big.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string line = "# " + std::string(1021, 'x') + "\n";
    for (std::size_t written = 0; written <= kMaxProfileBytes; written += line.size())
      std::fputs(line.c_str(), f);
    std::fclose(f);
  }
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto too_big = load_profile(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message().find("is larger than 1048576 bytes"), std::string::npos)
      << too_big.error().message();
  // A FIFO with no writer would block a plain read forever.
  auto pipe = load_profile(fifo);
  ASSERT_FALSE(pipe.ok());
  EXPECT_NE(pipe.error().message().find("is not a regular file"), std::string::npos)
      << pipe.error().message();
  std::remove(big.c_str());
  std::remove(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST(PfcProfile, DeployedRoceLosslessProfileGivesTheCommonRoceSetup) {
  auto profile = load_profile(FABRIC_TEST_DATA_DIR "/../../deploy/pfc/roce-lossless.yaml");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->name, "roce-lossless");
  EXPECT_TRUE(profile->devices.empty());
  expect_same(profile->config, roce_lossless());
  // Sections the profile does not name stay unset, so apply leaves them as they are.
  EXPECT_FALSE(profile->config.pfc_delay);
  EXPECT_FALSE(profile->config.prio2buffer);
  EXPECT_FALSE(profile->config.tc_maxrate);
  EXPECT_FALSE(profile->config.rdma_device);
}

TEST(PfcProfile, JsonFormOfTheSameProfileGivesTheSameConfig) {
  auto profile = load_profile(FABRIC_TEST_DATA_DIR "/pfc/roce-lossless.json");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->name, "roce-lossless");
  expect_same(profile->config, roce_lossless());
}

TEST(PfcProfile, JsonErrorsNameTheLineToo) {
  EXPECT_EQ(config_error("{\n  \"ets\": {\n    \"prio_tc\": [0, 0, 0, 3, 0, 0, 6, 0],\n"
                         "    \"tc_bw\": {\"0\": 50, \"3\": 60}\n  }\n}\n"),
            "ets.tc_bw (line 4): ETS shares sum to 110, not 100");
}

TEST(PfcProfile, EveryFieldInItsLessCommonSpelling) {
  auto profile = load_profile(FABRIC_TEST_DATA_DIR "/pfc/every-field.yaml");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->name, "every-field"); // no name: the file's, without .yaml
  EXPECT_EQ(profile->devices, (std::vector<std::string>{"eth2", "eth3"}));
  DesiredConfig want;
  want.pfc_en = (1u << 3) | (1u << 4);
  want.pfc_delay = 16;
  want.ets_willing = true;
  want.prio_tc = PerPriority<uint8_t>{0, 0, 0, 3, 4, 0, 6, 0};
  want.tc_bw = PerTc<uint8_t>{40, 0, 0, 30, 30, 0, 0, 0};
  want.tc_tsa = PerTc<uint8_t>{kEts, kStrict, kStrict, kEts, kEts, kStrict, kStrict, kVendor};
  want.apps = {
      app(AppSelector::kEthertype, 0x8915, 3), app(AppSelector::kEthertype, 0x8906, 4),
      app(AppSelector::kStream, 860, 4),       app(AppSelector::kDgram, 4791, 3),
      app(AppSelector::kAny, 3260, 4),         app(AppSelector::kDscp, 26, 3),
  };
  want.apps_exclusive = false;
  want.prio2buffer = PerPriority<uint8_t>{0, 0, 0, 1, 1, 0, 0, 0};
  want.buffer_size = std::array<uint32_t, 8>{262144, 1048576, 0, 0, 0, 0, 0, 4096};
  want.tc_maxrate = PerTc<uint64_t>{25000000, 0, 0, 2500000, 100000, 0, 1000, 12345};
  want.ecn_np = (1u << 3) | (1u << 4);
  want.ecn_rp = 0;
  want.rdma_device = "mlx5_1";
  want.cm_default_tos = 106;
  want.cm_default_roce_mode = "IB/RoCE v1";
  want.rdma_traffic_class = 0;
  expect_same(profile->config, want);
}

TEST(PfcProfile, AppEntriesComeOutSortedWhateverTheOrderWritten) {
  auto profile = parse_profile("app:\n  dscp_prio: {48: 6, 10: 1, 26: 3}\n"
                               "  dgram_port_prio: {4791: 3}\n",
                               "test");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  std::vector<AppEntry> want = {app(AppSelector::kDgram, 4791, 3), app(AppSelector::kDscp, 10, 1),
                                app(AppSelector::kDscp, 26, 3), app(AppSelector::kDscp, 48, 6)};
  EXPECT_EQ(apps_text(profile->config.apps), apps_text(want));
  EXPECT_TRUE(profile->config.apps_exclusive) << "exclusive is the default";
}

TEST(PfcProfile, TcBwAloneMakesTheTcsWithAShareEtsAndTheRestStrict) {
  auto profile = parse_profile("ets:\n  tc_bw: {0: 60, 3: 40}\n", "test");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->config.tc_tsa,
            (PerTc<uint8_t>{kEts, kStrict, kStrict, kEts, kStrict, kStrict, kStrict, kStrict}));
}

TEST(PfcProfile, RatesWithUnitsAreConvertedExactlyToKbits) {
  auto profile = parse_profile("maxrate:\n  tc_maxrate: [0.1Gbit, 1 Tbit, 800000bit, 1.5Mbit, "
                               "2kbit, 100, 0, 18446744073709551615]\n",
                               "test");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->config.tc_maxrate,
            (PerTc<uint64_t>{100000, 1000000000, 800, 1500, 2, 100, 0, 18446744073709551615u}));
}

TEST(PfcProfile, AnEmptyPrioPfcListMakesEveryPriorityLossy) {
  auto profile = parse_profile("pfc:\n  prio_pfc: []\n", "test");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->config.pfc_en, 0);
}

TEST(PfcProfile, ErrorsNameTheFieldAndTheLine) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      // ETS shares and classes that do not fit together.
      {"ets:\n  tc_tsa: {0: ets, 3: ets}\n  tc_bw: {0: 50, 3: 40}\n",
       "ets.tc_bw (line 3): ETS shares sum to 90, not 100"},
      {"ets:\n  tc_bw: {0: 50, 3: 40}\n", "ets.tc_bw (line 2): ETS shares sum to 90, not 100"},
      {"ets:\n  tc_tsa: {0: ets, 6: strict}\n  tc_bw:\n    0: 50\n    6: 50\n",
       "ets.tc_bw.6 (line 5): TC 6 is strict, so its share must be 0, not 50%"},
      {"ets:\n  prio_tc: [0, 0, 0, 3, 0, 0, 0, 0]\n  tc_tsa: {0: ets, 3: ets}\n"
       "  tc_bw: {0: 100}\n",
       "ets.prio_tc[3] (line 2): priority 3 maps to tc 3, which has 0% bandwidth"},
      {"ets:\n  tc_tsa: {0: ets}\n",
       "ets.tc_tsa (line 2): TCs 0 are ets but there is no ets.tc_bw to give them shares "
       "summing to 100"},
      {"ets:\n  tc_bw: {0: 150}\n", "ets.tc_bw.0 (line 2): share 150% is out of range 0-100%"},
      {"ets:\n  tc_tsa: {0: wrr}\n",
       "ets.tc_tsa.0 (line 2): TSA must be strict, cbs, ets or vendor, not 'wrr'"},
      // Priorities, TCs and their tables.
      {"pfc:\n  prio_pfc: [3, 8]\n", "pfc.prio_pfc[1] (line 2): priority 8 is out of range 0-7"},
      {"pfc:\n  prio_pfc:\n    - 3\n    - 4\n    - 3\n",
       "pfc.prio_pfc[2] (line 5): priority 3 is listed twice"},
      {"pfc:\n  prio_pfc: 3\n", "pfc.prio_pfc (line 2): must be a list of priorities 0-7, not '3'"},
      {"pfc:\n  delay: 70000\n", "pfc.delay (line 2): delay 70000 is out of range 0-65535"},
      {"pfc:\n  delay: -1\n", "pfc.delay (line 2): delay -1 is out of range 0-65535"},
      {"pfc:\n  delay: soon\n", "pfc.delay (line 2): delay must be a whole number, not 'soon'"},
      {"ets:\n  prio_tc: [0, 0, 0, 9, 0, 0, 0, 0]\n",
       "ets.prio_tc[3] (line 2): TC 9 is out of range 0-7"},
      {"ets:\n  prio_tc: [0, 0, 0, 3]\n",
       "ets.prio_tc (line 2): a list must have exactly 8 values, one per priority, not 4"},
      {"ets:\n  prio_tc: {3: 3, 6: 6}\n",
       "ets.prio_tc (line 2): a map must name every priority 0-7; missing 0, 1, 2, 4, 5, 7"},
      {"ets:\n  prio_tc: {0: 0, 1: 0, 2: 0, 3: 3, 4: 0, 5: 0, 6: 6, 8: 0}\n",
       "ets.prio_tc.8 (line 2): priority 8 is out of range 0-7"},
      {"ets:\n  willing: yes\n", "ets.willing (line 2): must be true or false, not 'yes'"},
      {"ets:\n  tc_bw: 100\n",
       "ets.tc_bw (line 2): must be a list of 8 values or a map TC -> value, not '100'"},
      // The APP table.
      {"app:\n  dscp_prio: {64: 3}\n", "app.dscp_prio.64 (line 2): DSCP 64 is out of range 0-63"},
      {"app:\n  dscp_prio:\n    26: 9\n",
       "app.dscp_prio.26 (line 3): priority 9 is out of range 0-7"},
      {"app:\n  ethtype_prio: {0x5dc: 3}\n",
       "app.ethtype_prio.0x5dc (line 2): ethertype 0x5dc is out of range 0x600-0xffff"},
      {"app:\n  dgram_port_prio: {65536: 3}\n",
       "app.dgram_port_prio.65536 (line 2): port 65536 is out of range 0-65535"},
      {"app:\n  dscp_prio: [26, 3]\n",
       "app.dscp_prio (line 2): must be a map of DSCP -> priority, not a list"},
      {"app:\n  exclusive: 1\n", "app.exclusive (line 2): must be true or false, not '1'"},
      // Buffers, rates, ECN, RDMA, devices.
      {"buffer:\n  buffer_size: [12Q, 0, 0, 0, 0, 0, 0, 0]\n",
       "buffer.buffer_size[0] (line 2): buffer size invalid value '12Q' (expected bytes, "
       "optionally with K, M or G (binary))"},
      {"buffer:\n  buffer_size: {0: 8G}\n",
       "buffer.buffer_size.0 (line 2): buffer size 8G is over 4 GiB"},
      {"buffer:\n  prio_buffer: [0, 0, 0, 8, 0, 0, 0, 0]\n",
       "buffer.prio_buffer[3] (line 2): buffer 8 is out of range 0-7"},
      {"maxrate:\n  tc_maxrate: {3: 25Gbps}\n",
       "maxrate.tc_maxrate.3 (line 2): must be a rate such as 25Gbit, 100Mbit or a number of "
       "kbit/s, not '25Gbps'"},
      {"maxrate:\n  tc_maxrate: {3: 12.5}\n",
       "maxrate.tc_maxrate.3 (line 2): rate 12.5 is not a whole number of kbit/s"},
      {"maxrate:\n  tc_maxrate: {3: 1500bit}\n",
       "maxrate.tc_maxrate.3 (line 2): rate 1500bit is not a whole number of kbit/s"},
      {"ecn:\n  roce_np: [3, 3]\n", "ecn.roce_np[1] (line 2): priority 3 is listed twice"},
      {"rdma:\n  cm_default_tos: 256\n",
       "rdma.cm_default_tos (line 2): ToS 256 is out of range 0-255"},
      {"rdma:\n  cm_default_roce_mode: v2\n",
       "rdma.cm_default_roce_mode (line 2): must be \"RoCE v2\" or \"IB/RoCE v1\", not 'v2'"},
      {"rdma:\n  device: [mlx5_0]\n", "rdma.device (line 2): must be text, not a list"},
      {"rdma:\n  device: mlx5/0\n",
       "rdma.device (line 2): RDMA device name 'mlx5/0' must be 1-63 characters without '/', ':' "
       "or whitespace"},
      {"name: \"\"\n", "name (line 1): must not be empty"},
      {"devices: [eth2, a-name-too-long-for-linux]\n",
       "devices[1] (line 1): netdev name 'a-name-too-long-for-linux' must be 1-15 characters "
       "without '/', ':' or whitespace"},
      {"devices:\n  - eth2\n  - ../eth3\n",
       "devices[1] (line 3): netdev name '../eth3' must be 1-15 characters without '/', ':' or "
       "whitespace"},
      {"devices: [eth2, eth2]\n", "devices[1] (line 1): netdev eth2 is listed twice"},
      // The shape of the document.
      {"", "profile (line 1): is empty; expected a map of sections (pfc, ets, app, ...)"},
      {"# nothing but a comment\n",
       "profile (line 1): is empty; expected a map of sections (pfc, ets, app, ...)"},
      {"- pfc\n- ets\n",
       "profile (line 1): must be a map of sections (pfc, ets, app, ...), not a list"},
      {"pfc:\n  prio_pfc: [3]\n---\nets:\n  willing: false\n",
       "profile (line 4): has a second YAML document; a profile is one document"},
      {"name: x\npfc:\n", "pfc (line 2): has no value"},
      {"pfc: [3]\n", "pfc (line 1): must be a map of settings, not a list"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(config_error(c.yaml), c.message) << "for the profile:\n" << c.yaml;
  }
}

TEST(PfcProfile, UnknownKeysAreNamedWithTheKeysAllowedThere) {
  EXPECT_EQ(config_error("name: x\n\npfc:\n  prio_pfc: [3]\n  prio_lossless: [4]\n"),
            "pfc.prio_lossless (line 5): unknown key 'prio_lossless'; allowed here: prio_pfc, "
            "delay");
  EXPECT_EQ(config_error("pcf:\n  prio_pfc: [3]\n"),
            "pcf (line 1): unknown key 'pcf'; allowed here: name, devices, pfc, ets, app, "
            "buffer, maxrate, ecn, rdma");
  EXPECT_EQ(config_error("app:\n  dscp: {26: 3}\n"),
            "app.dscp (line 2): unknown key 'dscp'; allowed here: dscp_prio, ethtype_prio, "
            "stream_port_prio, dgram_port_prio, port_prio, exclusive");
}

// yaml-cpp keeps both copies of a repeated key (lookups find the first); the parser
// refuses them rather than silently dropping one.
TEST(PfcProfile, KeysGivenTwiceAreErrors) {
  EXPECT_EQ(config_error("pfc:\n  prio_pfc: [3]\nets:\n  willing: false\npfc:\n  delay: 0\n"),
            "pfc (line 5): 'pfc' is given twice (first on line 1)");
  EXPECT_EQ(config_error("ets:\n  tc_bw: {0: 100}\n  tc_bw: {3: 100}\n"),
            "ets.tc_bw (line 3): 'tc_bw' is given twice (first on line 2)");
  EXPECT_EQ(config_error("app:\n  dscp_prio:\n    26: 3\n    48: 6\n    26: 0\n"),
            "app.dscp_prio.26 (line 5): DSCP 26 is given twice (first on line 3)");
  // The same number written two ways is the same key.
  EXPECT_EQ(config_error("app:\n  ethtype_prio: {0x8915: 3, 35093: 4}\n"),
            "app.ethtype_prio.35093 (line 2): ethertype 0x8915 is given twice (first on line 2)");
  EXPECT_EQ(config_error("ets:\n  tc_bw:\n    0: 50\n    0: 50\n"),
            "ets.tc_bw.0 (line 4): TC 0 is given twice (first on line 3)");
  EXPECT_EQ(config_error(R"({"ets": {"willing": true, "willing": false}})"),
            "ets.willing (line 1): 'willing' is given twice (first on line 1)");
}

TEST(PfcProfile, SameProtocolUnderDifferentSelectorsIsFine) {
  auto profile = parse_profile("app:\n  stream_port_prio: {4791: 1}\n"
                               "  dgram_port_prio: {4791: 3}\n  port_prio: {4791: 2}\n",
                               "test");
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->config.apps.size(), 3u);
}

TEST(PfcProfile, ErrorsStartWithTheSourceName) {
  auto profile = parse_profile("ets:\n  tc_bw: {0: 50, 3: 40}\n", "site/roce.yaml");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_EQ(profile.error().operation(), "ets.tc_bw (line 2)");
  EXPECT_EQ(profile.error().message(),
            "site/roce.yaml: ets.tc_bw (line 2): ETS shares sum to 90, not 100");
}

TEST(PfcProfile, YamlSyntaxErrorIsDecodeWithLineAndColumn) {
  auto profile = parse_profile("pfc:\n  prio_pfc: [3, 4\nets:\n  willing: false\n", "p.yaml");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(profile.error().message(), "p.yaml: line 3, column 4: end of sequence flow not found")
      << "yaml-cpp reports where it gave up: after the unclosed list";

  auto json = parse_profile("{\"pfc\": {\"prio_pfc\": [3]}}}", "p.json");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.error().code(), ErrorCode::kDecode);
  EXPECT_NE(json.error().message().find("line 1, column 27"), std::string::npos)
      << json.error().message();
}

TEST(PfcProfile, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = FABRIC_TEST_DATA_DIR "/pfc/no-such-profile.yaml";
  auto profile = load_profile(path);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(profile.error().message().find(path), std::string::npos) << profile.error().message();
}

TEST(PfcProfile, ErrorsFromAFileNameTheFile) {
  const std::string path = FABRIC_TEST_DATA_DIR "/pfc/bad-shares.yaml";
  auto profile = load_profile(path);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_EQ(profile.error().message(),
            path + ": ets.tc_bw (line 9): ETS shares sum to 90, not 100");
}

} // namespace
} // namespace fabric::pfc
