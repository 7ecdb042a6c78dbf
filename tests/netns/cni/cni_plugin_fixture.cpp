#include "tests/netns/cni/cni_plugin_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/json.h"

namespace fabric::testing {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Conf::Conf(const std::string& text) {
  doc_.Parse(text.c_str());
  EXPECT_FALSE(doc_.HasParseError()) << text;
}

Conf::Conf(const Conf& other) {
  doc_.CopyFrom(other.doc_, doc_.GetAllocator());
}

Conf& Conf::set(const std::string& key, const std::string& json_value) {
  rapidjson::Document value;
  value.Parse(json_value.c_str());
  EXPECT_FALSE(value.HasParseError()) << "bad JSON for " << key << ": " << json_value;
  auto& alloc = doc_.GetAllocator();
  rapidjson::Value copy(value, alloc);
  if (auto it = doc_.FindMember(key.c_str()); it != doc_.MemberEnd()) {
    it->value = copy;
  } else {
    doc_.AddMember(rapidjson::Value(key.c_str(), alloc), copy, alloc);
  }
  return *this;
}

Conf& Conf::erase(const std::string& key) {
  doc_.RemoveMember(key.c_str());
  return *this;
}

std::string Conf::str() const {
  return json::to_string(doc_);
}

Result<rapidjson::Document> ip_json(const std::string& ns, std::vector<std::string> args) {
  args.insert(args.begin(), {"ip", "-j", "-d", "-n", ns});
  FABRIC_ASSIGN_OR_RETURN(std::string out, run_checked(args));
  return json::parse(out, "ip -j output");
}

std::vector<LinkView> links_in(const std::string& ns) {
  std::vector<LinkView> links;
  auto doc = ip_json(ns, {"addr", "show"});
  if (!doc.ok()) {
    ADD_FAILURE() << doc.error().message();
    return links;
  }
  for (const auto& l : doc->GetArray()) {
    LinkView view;
    view.name = l["ifname"].GetString();
    view.ifindex = l["ifindex"].GetInt();
    if (const auto* mac = find_member(l, "address")) view.mac = mac->GetString();
    if (const auto* alias = find_member(l, "ifalias")) view.alias = alias->GetString();
    view.mtu = l["mtu"].GetInt();
    for (const auto& flag : l["flags"].GetArray()) {
      view.up |= std::string(flag.GetString()) == "UP";
    }
    if (const auto* info = find_member(l, "linkinfo")) {
      if (const auto* kind = find_member(*info, "info_kind")) view.kind = kind->GetString();
      if (const auto* data = find_member(*info, "info_data")) {
        if (const auto* mode = find_member(*data, "mode"); mode && mode->IsString()) {
          view.macvlan_mode = mode->GetString();
        }
      }
    }
    if (const auto* addrs = find_member(l, "addr_info")) {
      for (const auto& a : addrs->GetArray()) {
        if (std::string(a["family"].GetString()) != "inet") continue;
        view.ipv4.push_back(std::string(a["local"].GetString()) + "/" +
                            std::to_string(a["prefixlen"].GetInt()));
      }
    }
    links.push_back(std::move(view));
  }
  return links;
}

std::optional<LinkView> link_in(const std::string& ns, const std::string& name) {
  for (auto& l : links_in(ns)) {
    if (l.name == name) return l;
  }
  return std::nullopt;
}

std::vector<std::string> link_names(const std::string& ns) {
  std::vector<std::string> names;
  for (const auto& l : links_in(ns))
    names.push_back(l.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<RouteView> routes_in(const std::string& ns, const std::string& dev,
                                 const std::string& table) {
  std::vector<RouteView> routes;
  auto doc = ip_json(ns, {"route", "show", "table", table, "dev", dev});
  if (!doc.ok()) {
    ADD_FAILURE() << doc.error().message();
    return routes;
  }
  for (const auto& r : doc->GetArray()) {
    RouteView view;
    view.dst = r["dst"].GetString();
    if (const auto* gw = find_member(r, "gateway")) view.gateway = gw->GetString();
    if (const auto* scope = find_member(r, "scope")) view.scope = scope->GetString();
    if (const auto* metric = find_member(r, "metric")) view.metric = metric->GetInt();
    routes.push_back(std::move(view));
  }
  return routes;
}

bool has_route(const std::string& ns, const std::string& dev, const std::string& dst,
               const std::string& gateway) {
  auto routes = routes_in(ns, dev);
  return std::any_of(routes.begin(), routes.end(),
                     [&](const RouteView& r) { return r.dst == dst && r.gateway == gateway; });
}

void run_ip(std::vector<std::string> args) {
  args.insert(args.begin(), "ip");
  auto r = run_checked(args);
  ASSERT_TRUE(r.ok()) << r.error().message();
}

void CniPluginNetns::SetUp() {
  if (!can_manage_network()) GTEST_SKIP() << skip_reason();
  host_ = net_.ns_name("host");
  ASSERT_FALSE(net_.add_namespace("host").empty());
  parent_ = net_.add_veth("p", host_, host_).first;
  ASSERT_FALSE(parent_.empty());
  char dir[] = "/tmp/fabric-cni-netns.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  dir_ = dir;
  state_dir_ = dir_ + "/state";
  data_dir_ = dir_ + "/ipam";
  runtime_.emplace(host_);
  host_links_ = link_names(host_);
}

void CniPluginNetns::TearDown() {
  if (!dir_.empty()) fs::remove_all(dir_);
}

std::string CniPluginNetns::host_local(const std::string& subnet,
                                       const std::string& range_extra) const {
  std::string gw = subnet.substr(0, subnet.rfind('.')) + ".1";
  return "{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":" + json_string(subnet) + range_extra +
         "}]],\"routes\":[{\"dst\":\"10.20.0.0/16\",\"gw\":" + json_string(gw) +
         "}],\"dataDir\":" + json_string(data_dir_) + "}";
}

std::string CniPluginNetns::static_ipam(const std::string& address) {
  return "{\"type\":\"static\",\"addresses\":[{\"address\":" + json_string(address) +
         ",\"gateway\":\"10.9.1.1\"}],\"routes\":[{\"dst\":\"10.30.0.0/16\",\"gw\":"
         "\"10.9.1.1\"}]}";
}

Conf CniPluginNetns::conf(const std::string& version) const {
  return Conf("{\"cniVersion\":" + json_string(version) + ",\"name\":" + json_string(kNetwork) +
              ",\"type\":\"fabric-cni\",\"master\":" + json_string(parent_) +
              ",\"gidCheck\":\"off\",\"stateDir\":" + json_string(state_dir_) +
              ",\"ipam\":" + host_local() + "}");
}

CniReply CniPluginNetns::run(CniCall call) {
  auto reply = runtime_->run(call);
  if (!reply.ok()) {
    ADD_FAILURE() << call.command << ": " << reply.error().message();
    return {};
  }
  return *reply;
}

CniReply CniPluginNetns::call(const std::string& command, const std::string& container_id,
                              const std::string& netns, const Conf& c, const std::string& args,
                              const std::string& ifname) {
  CniCall cc;
  cc.command = command;
  cc.container_id = container_id;
  cc.netns = netns;
  cc.ifname = ifname;
  cc.args = args;
  cc.path = cni_path_;
  cc.config = c.str();
  cc.nic_stand_in = nic_stand_in_;
  cc.nic_stand_in_sysfs = nic_stand_in_sysfs_;
  return run(cc);
}

// host-local keeps one file per address, named after it, holding "CONTAINERID\r\nIFNAME";
// "lock" and "last_reserved_ip.N" are its bookkeeping.
std::map<std::string, std::string> CniPluginNetns::allocations() const {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(data_dir_ + "/" + kNetwork, ec)) {
    std::string name = entry.path().filename();
    if (name == "lock" || name.rfind("last_reserved_ip", 0) == 0) continue;
    std::string text = read_text(entry.path());
    out[name] = text.substr(0, text.find_first_of("\r\n"));
  }
  return out;
}

bool CniPluginNetns::has_allocation(const std::string& container_id) const {
  for (const auto& [ip, owner] : allocations()) {
    if (owner == container_id) return true;
  }
  return false;
}

std::string CniPluginNetns::state_path(const std::string& container_id, const std::string& ifname) {
  return state_dir_ + "/networks/" + kNetwork + "/" + container_id + ":" + ifname + ".json";
}

std::vector<std::string> CniPluginNetns::state_files() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(state_dir_ + "/networks/" + std::string(kNetwork), ec)) {
    out.push_back(entry.path().filename());
  }
  return out;
}

void CniPluginNetns::add_ipam_plugin(const std::string& name, const std::string& script) {
  fs::create_directories(dir_ + "/plugins");
  const std::string path = dir_ + "/plugins/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << script;
  fs::permissions(path, fs::perms::owner_all);
  cni_path_ = dir_ + "/plugins:/usr/lib/cni";
}

void CniPluginNetns::add_gate() {
  const std::string allocated = gate_file("allocated"), open = gate_file("open");
  add_ipam_plugin("gated", "if [ \"$CNI_COMMAND\" != ADD ]; then exec /usr/lib/cni/host-local; fi\n"
                           "out=$(/usr/lib/cni/host-local) || { printf '%s' \"$out\"; exit 1; }\n"
                           "echo \"$PPID $$\" >" +
                               allocated +
                               ".tmp\n"
                               "mv " +
                               allocated + ".tmp " + allocated +
                               "\n"
                               "i=0\n"
                               "while [ ! -e " +
                               open +
                               " ] && [ $i -lt 3000 ]; do\n"
                               "  sleep 0.01; i=$((i + 1))\n"
                               "done\n"
                               "printf '%s' \"$out\"\n");
}

Conf CniPluginNetns::gated(Conf c) const {
  std::string ipam = host_local();
  ipam.replace(ipam.find("host-local"), std::string("host-local").size(), "gated");
  c.set("ipam", ipam);
  return c;
}

void CniPluginNetns::open_gate() {
  std::ofstream(gate_file("open")) << "\n";
}

std::optional<std::pair<int, int>> CniPluginNetns::wait_for_gate() {
  const std::string path = gate_file("allocated");
  if (!wait_until([&] { return fs::exists(path); })) return std::nullopt;
  std::istringstream in(read_text(path));
  std::pair<int, int> pids{0, 0};
  if (!(in >> pids.first >> pids.second)) return std::nullopt;
  return pids;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void CniPluginNetns::expect_no_attachment(const std::string& container_id,
                                          const std::string& pod_ns) {
  if (!pod_ns.empty() && namespace_exists(pod_ns)) {
    for (const auto& l : links_in(pod_ns)) {
      EXPECT_NE(l.kind, "macvlan") << l.name << " left in " << pod_ns;
    }
  }
  EXPECT_EQ(link_names(host_), host_links_);
  EXPECT_FALSE(has_allocation(container_id)) << container_id << " still holds an address";
  EXPECT_FALSE(fs::exists(state_path(container_id))) << state_path(container_id);
}

void CniExclusiveNetns::SetUp() {
  CniPluginNetns::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  nic_ = net_.add_veth("x", host_, host_).first;
  ASSERT_FALSE(nic_.empty());
  auto link = link_in(host_, nic_);
  ASSERT_TRUE(link);
  nic_mac_ = link->mac;
  host_links_ = link_names(host_);
  // The netdev's sysfs directory as the plugin will see it: a `device` link to a folder
  // that, like a virtio function, is no PCI address and has no RDMA device.
  nic_stand_in_sysfs_ = dir_ + "/stand-in-sysfs";
  fs::create_directories(dir_ + "/stand-in-device");
  fs::create_directories(nic_stand_in_sysfs_);
  fs::create_directory_symlink(dir_ + "/stand-in-device", nic_stand_in_sysfs_ + "/device");
  nic_stand_in_ = nic_;
}

Conf CniExclusiveNetns::exclusive() const {
  Conf cf = conf();
  cf.set("mode", "\"exclusive\"").set("master", json_string(nic_)).erase("gidCheck");
  return cf;
}

} // namespace fabric::testing
