// Results of every version, parsed and rendered; error and version documents.
#include <gtest/gtest.h>

#include "cni/result.h"
#include "cni/version.h"
#include "common/json.h"
#include "tests/unit/cni/corpus.h"

namespace fabric::cni {
namespace {

// Documents are compared parsed, so that layout and key order do not matter.
void expect_json_eq(const std::string& actual, const std::string& expected) {
  auto a = json::parse(actual, "actual");
  auto e = json::parse(expected, "expected");
  ASSERT_TRUE(a.ok()) << a.error().message() << "\n" << actual;
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_TRUE(*a == *e) << "actual:\n" << actual << "expected:\n" << expected;
}

// A pod-side result with everything 1.1.0 can say.
CniResult full_result() {
  CniResult r;
  r.interfaces.push_back(Interface{"net1", "02:00:0a:4d:01:0a", 4200, "/var/run/netns/pod",
                                   "/run/vhost/net1.sock", "0000:3b:00.1", "", std::nullopt});
  r.ips.push_back(IpConfig{"10.77.1.10/16", "10.77.0.1", 0});
  r.ips.push_back(IpConfig{"fd00:77::a/64", std::nullopt, 0});
  Route route;
  route.dst = "10.78.0.0/16";
  route.gw = "10.77.0.1";
  route.mtu = 4200;
  route.advmss = 4160;
  route.priority = 100;
  route.table = 200;
  route.scope = 0;
  r.routes.push_back(route);
  r.dns.nameservers = {"10.77.0.53"};
  r.dns.search = {"svc.cluster.local"};
  return r;
}

TEST(CniResultRender, ZeroDotThreeAndFourCarryIpVersion) {
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0"}) {
    SCOPED_TRACE(v);
    expect_json_eq(render_result(full_result(), v), std::string(R"({"cniVersion": ")") + v + R"(",
      "interfaces": [{"name": "net1", "mac": "02:00:0a:4d:01:0a", "sandbox": "/var/run/netns/pod"}],
      "ips": [{"version": "4", "interface": 0, "address": "10.77.1.10/16", "gateway": "10.77.0.1"},
              {"version": "6", "interface": 0, "address": "fd00:77::a/64"}],
      "routes": [{"dst": "10.78.0.0/16", "gw": "10.77.0.1"}],
      "dns": {"nameservers": ["10.77.0.53"], "search": ["svc.cluster.local"]}})");
  }
}

TEST(CniResultRender, OneDotZeroHasNoIpVersionNorOneDotOneFields) {
  expect_json_eq(render_result(full_result(), "1.0.0"), R"({"cniVersion": "1.0.0",
      "interfaces": [{"name": "net1", "mac": "02:00:0a:4d:01:0a", "sandbox": "/var/run/netns/pod"}],
      "ips": [{"interface": 0, "address": "10.77.1.10/16", "gateway": "10.77.0.1"},
              {"interface": 0, "address": "fd00:77::a/64"}],
      "routes": [{"dst": "10.78.0.0/16", "gw": "10.77.0.1"}],
      "dns": {"nameservers": ["10.77.0.53"], "search": ["svc.cluster.local"]}})");
}

TEST(CniResultRender, OneDotOneHasInterfaceAndRouteExtensions) {
  expect_json_eq(render_result(full_result(), "1.1.0"), R"({"cniVersion": "1.1.0",
      "interfaces": [{"name": "net1", "mac": "02:00:0a:4d:01:0a", "mtu": 4200,
                      "sandbox": "/var/run/netns/pod", "socketPath": "/run/vhost/net1.sock",
                      "pciID": "0000:3b:00.1"}],
      "ips": [{"interface": 0, "address": "10.77.1.10/16", "gateway": "10.77.0.1"},
              {"interface": 0, "address": "fd00:77::a/64"}],
      "routes": [{"dst": "10.78.0.0/16", "gw": "10.77.0.1", "mtu": 4200, "advmss": 4160,
                  "priority": 100, "table": 200, "scope": 0}],
      "dns": {"nameservers": ["10.77.0.53"], "search": ["svc.cluster.local"]}})");
}

TEST(CniResultRender, EmptyResultStillHasDnsLikeLibcniPlugins) {
  expect_json_eq(render_result(CniResult{}, "1.0.0"), R"({"cniVersion": "1.0.0", "dns": {}})");
}

TEST(CniResultRender, RoundTripsInEveryVersion) {
  for (const auto& v : supported_versions()) {
    SCOPED_TRACE(v);
    auto parsed = parse_result(render_result(full_result(), v));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    EXPECT_EQ(parsed->cni_version, v);
    EXPECT_EQ(parsed->ips, full_result().ips);
    EXPECT_EQ(parsed->dns, full_result().dns);
    if (v == "1.1.0") {
      EXPECT_EQ(parsed->interfaces, full_result().interfaces);
      EXPECT_EQ(parsed->routes, full_result().routes);
    }
  }
}

TEST(CniResultRender, RdmaDeviceAndGidIndexInEveryVersion) {
  CniResult result;
  Interface pod_if;
  pod_if.name = "net1";
  pod_if.sandbox = "/var/run/netns/pod";
  pod_if.rdma_device = "mlx5_0";
  pod_if.gid_index = 3;
  result.interfaces.push_back(pod_if);
  for (const auto& v : supported_versions()) {
    SCOPED_TRACE(v);
    auto doc = json::parse(render_result(result, v), "result");
    ASSERT_TRUE(doc.ok());
    EXPECT_STREQ((*doc)["interfaces"][0]["rdmaDevice"].GetString(), "mlx5_0");
    EXPECT_EQ((*doc)["interfaces"][0]["gidIndex"].GetInt(), 3);
    auto parsed = parse_result(render_result(result, v));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    EXPECT_EQ(parsed->interfaces[0].gid_index, 3);
    EXPECT_EQ(parsed->interfaces[0].rdma_device, "mlx5_0");
  }
  // Without an RDMA device (a veth parent) neither key appears.
  result.interfaces[0].rdma_device.clear();
  result.interfaces[0].gid_index.reset();
  auto plain = render_result(result, "1.0.0");
  EXPECT_EQ(plain.find("rdmaDevice"), std::string::npos);
  EXPECT_EQ(plain.find("gidIndex"), std::string::npos);
}

TEST(CniResultParse, ReadsEveryVersionsIpamOutput) {
  struct Case {
    const char* file;
    const char* version;
    const char* address;
    const char* gateway;
  };
  for (const Case& c : {Case{"result-0.3.0.json", "0.3.0", "10.1.0.5/16", "10.1.0.1"},
                        Case{"result-0.3.1.json", "0.3.1", "10.1.0.5/16", "10.1.0.1"},
                        Case{"result-0.4.0.json", "0.4.0", "192.168.1.7/24", "192.168.1.1"},
                        Case{"result-1.0.0.json", "1.0.0", "10.9.0.2/29", "10.9.0.1"},
                        Case{"result-1.1.0.json", "1.1.0", "10.77.1.10/16", "10.77.0.1"}}) {
    SCOPED_TRACE(c.file);
    auto r = parse_result(corpus_file(c.file));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->cni_version, c.version);
    ASSERT_FALSE(r->ips.empty());
    EXPECT_EQ(r->ips[0].address, c.address);
    EXPECT_EQ(r->ips[0].gateway, c.gateway);
  }
  auto full = parse_result(corpus_file("result-0.3.1.json"));
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->ips[1].address, "fd00:1::5/64");
  EXPECT_EQ(full->routes.at(0).gw, "10.1.0.1");
  EXPECT_EQ(full->dns.domain, "cluster.local");
  EXPECT_EQ(full->dns.options, std::vector<std::string>{"ndots:5"});
  EXPECT_EQ(full->interfaces.at(0).sandbox, "/var/run/netns/blue");

  auto v11 = parse_result(corpus_file("result-1.1.0.json"));
  ASSERT_TRUE(v11.ok());
  EXPECT_EQ(v11->interfaces.at(0).mtu, 4200);
  EXPECT_EQ(v11->interfaces.at(0).pci_id, "0000:3b:00.1");
  EXPECT_EQ(v11->routes.at(0).table, 200);
  EXPECT_EQ(v11->routes.at(0).scope, 0);
}

void expect_result_error(const std::string& text, ErrorCode code, const std::string& needle) {
  auto r = parse_result(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code(), code) << r.error().message();
  EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
}

TEST(CniResultParse, RefusesWhatIsWrongNamingTheField) {
  expect_result_error(corpus_file("broken-result-version-mismatch.json"), ErrorCode::kInvalidConfig,
                      "ips[0].version");
  expect_result_error(R"({"ips": [{"address": "10.1.0.5"}]})", ErrorCode::kInvalidConfig,
                      "ips[0].address");
  expect_result_error(R"({"ips": [{"address": "10.1.0.5/33"}]})", ErrorCode::kInvalidConfig,
                      "ips[0].address");
  expect_result_error(R"({"ips": [{"address": "10.1.0.5/24", "gateway": "fd00::1"}]})",
                      ErrorCode::kInvalidConfig, "ips[0].gateway");
  expect_result_error(R"({"interfaces": [{"name": "a"}], "ips": [{"address": "10.1.0.5/24",
                         "interface": 1}]})",
                      ErrorCode::kInvalidConfig, "ips[0].interface");
  expect_result_error(R"({"routes": [{"gw": "10.0.0.1"}]})", ErrorCode::kInvalidConfig,
                      "routes[0].dst");
  expect_result_error(R"({"routes": [{"dst": "0.0.0.0/0", "scope": 300}]})",
                      ErrorCode::kInvalidConfig, "routes[0].scope");
  expect_result_error(R"({"dns": {"nameservers": "10.0.0.53"}})", ErrorCode::kInvalidConfig,
                      "dns.nameservers");
  expect_result_error(R"({"cniVersion": "0.2.0", "ip4": {"ip": "10.0.0.2/24"}})",
                      ErrorCode::kIncompatibleVersion, "0.2.0");
  expect_result_error("{\"ips\": [", ErrorCode::kDecode, "line 1, column 10");
  expect_result_error("{\"ips\": [{\"address\": \"10.0.0.1\\u0000x/24\"}]}",
                      ErrorCode::kInvalidConfig, "ips[0].address");
}

TEST(CniResultParse, IpamOutputWithoutInterfacesMayNameAnInterfaceIndex) {
  auto r = parse_result(R"({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.2/24",
                           "interface": 2}]})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->ips[0].interface, 2);
}

TEST(CniErrorDocument, CarriesTheMappedCodeMessageAndHint) {
  Error e = Error(ErrorCode::kInvalidConfig, "mtu", "must be between 68 and 65535")
                .with_hint("set mtu to the parent's MTU or less");
  e.with_context("parsing the network configuration");
  expect_json_eq(render_error(e, "1.0.0"), R"({"cniVersion": "1.0.0", "code": 7,
      "msg": "parsing the network configuration: mtu: must be between 68 and 65535",
      "details": "set mtu to the parent's MTU or less"})");
}

TEST(CniErrorDocument, OverrideEmptyVersionAndNoDetails) {
  Error e(ErrorCode::kNotFound, "rdma device mlx5_9", "does not exist");
  expect_json_eq(render_error(e, "", 50), R"({"cniVersion": "1.1.0", "code": 50,
      "msg": "rdma device mlx5_9: does not exist"})");
  // A version we do not speak (the error may be about it) is written as ours.
  auto doc = json::parse(render_error(e, "0.1.0"), "error");
  ASSERT_TRUE(doc.ok()) << "exactly one JSON document";
  EXPECT_EQ(std::string((*doc)["cniVersion"].GetString()), "1.1.0");
  EXPECT_EQ((*doc)["code"].GetInt(), 100);
}

TEST(CniVersionReply, ListsEverySupportedVersion) {
  expect_json_eq(render_version_reply(kLatestVersion), R"({"cniVersion": "1.1.0",
      "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]})");
}

TEST(CniPluginError, ReadsLibcniErrorsWithoutCniVersion) {
  auto e = parse_error(corpus_file("error-host-local.json"));
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->code, 999);
  EXPECT_NE(e->msg.find("no IP addresses available"), std::string::npos);
  EXPECT_TRUE(e->details.empty());
  EXPECT_FALSE(parse_error(R"({"msg": "no code"})").ok());
  EXPECT_FALSE(parse_error("garbage").ok());
}

TEST(CniPluginError, WellKnownCodesKeepTheirNumber) {
  for (int code : {1, 4, 6, 7, 11}) {
    EXPECT_EQ(cni_code_for(error_code_for_cni(code)), code) << code;
  }
  EXPECT_EQ(error_code_for_cni(3), ErrorCode::kNotFound);
  EXPECT_EQ(error_code_for_cni(999), ErrorCode::kSystem);
}

TEST(CniAddresses, FamiliesAndPrefixes) {
  EXPECT_TRUE(is_cidr("10.0.0.1/32"));
  EXPECT_TRUE(is_cidr("fd00::1/128"));
  EXPECT_FALSE(is_cidr("fd00::1/129"));
  EXPECT_FALSE(is_cidr("10.0.0.1/"));
  EXPECT_FALSE(is_cidr("10.0.0.1/-1"));
  EXPECT_TRUE(is_ipv4_address("192.168.0.1"));
  EXPECT_FALSE(is_ipv4_address("fd00::1"));
  EXPECT_TRUE(is_ip_address("fd00::1"));
  EXPECT_FALSE(is_ip_address("10.0.0.256"));
}

// The reference plugins' ConfigureIface rule for routes IPAM gives without a gateway.
TEST(CniRoutes, ARouteWithoutGatewayTakesThatOfItsFamily) {
  std::vector<IpConfig> ips = {{"fd00::5/64", std::string("fd00::1"), 0},
                               {"10.9.0.5/24", std::nullopt, 0},
                               {"10.9.1.5/24", std::string("10.9.1.1"), 0}};
  EXPECT_EQ(with_default_gateway({"0.0.0.0/0"}, ips).gw, "10.9.1.1");
  EXPECT_EQ(with_default_gateway({"::/0"}, ips).gw, "fd00::1");
  Route own{"10.20.0.0/16", std::string("10.9.0.254")};
  EXPECT_EQ(with_default_gateway(own, ips).gw, "10.9.0.254") << "a route's own gw wins";
  Route table{"10.30.0.0/16"};
  table.table = 100;
  table.priority = 50;
  Route filled = with_default_gateway(table, ips);
  EXPECT_EQ(filled.gw, "10.9.1.1");
  EXPECT_EQ(filled.table, 100);
  EXPECT_EQ(filled.priority, 50);
  EXPECT_FALSE(with_default_gateway({"0.0.0.0/0"}, {{"10.9.0.5/24", std::nullopt, 0}}).gw)
      << "no gateway to take: the route stays on-link";
}

} // namespace
} // namespace fabric::cni
