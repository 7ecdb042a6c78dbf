// Reading a profile: YAML, or JSON (which is YAML), through yaml-cpp.
//
// The format. Every section and every key is optional; keys follow iproute2 `dcb` where it
// has a name for the thing. Numbers may be decimal or hex (0x8915); map keys may be quoted
// (as JSON needs them). A key given with no value is an error, not "absent".
//
//   name: roce-lossless          # default: the file name without .yaml/.yml/.json
//   devices: [eth2, eth3]        # netdev names: 1-15 chars, no '/', ':' or whitespace
//   pfc:
//     prio_pfc: [3]              # exactly the lossless priorities (-> pfc_en); [] = none
//     delay: 0                   # bit times, 0-65535
//   ets:
//     willing: false             # true or false
//     prio_tc: [0, 0, 0, 3, 0, 0, 6, 0]       # 8 TCs (index = priority), or a map
//                                             # {priority: tc} naming all 8 priorities
//     tc_bw: {0: 50, 3: 50}      # percent: 8 values, or a map {tc: percent}; unnamed = 0
//     tc_tsa: {0: ets, 3: ets, 6: strict}     # strict, cbs, ets or vendor: 8 words or a
//                                             # map {tc: word}; unnamed = strict
//   app:                         # APP table: {protocol: priority} per selector
//     dscp_prio: {26: 3}         # DSCP 0-63 (selector 5)
//     ethtype_prio: {0x8915: 3}  # ethertype 0x600-0xffff (selector 1)
//     stream_port_prio: {}       # TCP/SCTP port 0-65535 (selector 2)
//     dgram_port_prio: {4791: 3} # UDP/DCCP port (selector 3)
//     port_prio: {}              # any-protocol port (selector 4)
//     exclusive: true            # default: entries of these selectors not listed go
//   buffer:
//     prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]  # buffer 0-7 per priority: 8, or a full map
//     buffer_size: [256K, 256K, 0, 0, 0, 0, 0, 0]  # bytes (K/M/G binary): 8, or a map
//                                                  # {buffer: size}; unnamed = 0
//   maxrate:
//     tc_maxrate: {3: 25Gbit}    # a bare number is kbit/s (the kernel's unit); units
//                                # bit, kbit, mbit, gbit, tbit are decimal, as in tc;
//                                # 8 values or a map {tc: rate}; unnamed = 0 (no limit)
//   ecn:
//     roce_np: [3]               # priorities with ECN as notification point (-> ecn_np)
//     roce_rp: [3]               # ... and as reaction point (-> ecn_rp)
//   rdma:
//     device: mlx5_0             # default: the RDMA device on the netdev
//     cm_default_tos: 106        # 0-255
//     cm_default_roce_mode: RoCE v2          # "RoCE v2" or "IB/RoCE v1"
//     traffic_class: 106         # 0-255
//
// When the ETS fields are given they must make sense together: the shares of the ets TCs
// sum to 100, strict TCs have no share, and no priority maps to an ets TC with 0%. With
// tc_bw but no tc_tsa, the TCs with a share are ets and the rest strict (and tc_tsa is
// set so), so what is checked is what gets applied.
#include "pfc/profile.h"

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>

#include <yaml-cpp/yaml.h>

#include "common/yaml_fields.h"
#include "common/atomic_file.h"
#include "common/units.h"

namespace fabric::pfc {
namespace {

using namespace yaml;

constexpr Range kPriority{"priority", 0, 7};
constexpr Range kTc{"TC", 0, 7};
constexpr Range kBuffer{"buffer", 0, 7};
constexpr Range kDscp{"DSCP", 0, 63};
constexpr Range kPort{"port", 0, 65535};
constexpr Range kEthertype{"ethertype", 0x600, 0xffff, true};
constexpr Range kShare{"share", 0, 100, false, "%"};
constexpr Range kDelay{"delay", 0, 65535};
constexpr Range kTos{"ToS", 0, 255};
constexpr Range kTrafficClass{"traffic class", 0, 255};

// A list of priorities, each at most once, as a bitmask (bit p = priority p).
Result<uint8_t> read_priority_set(const Field& f) {
  if (!f.node.IsSequence()) {
    return invalid(f, "must be a list of priorities 0-7, not " + describe(f.node));
  }
  uint8_t mask = 0;
  for (std::size_t i = 0; i < f.node.size(); ++i) {
    Field item = list_item(f, i);
    FABRIC_ASSIGN_OR_RETURN(uint64_t prio, read_number(item, kPriority));
    if (mask & (1u << prio))
      return invalid(item, "priority " + item.node.Scalar() + " is listed twice");
    mask = static_cast<uint8_t>(mask | (1u << prio));
  }
  return mask;
}

// A value for each of 8 priorities, TCs or buffers: a list of exactly 8 (index = position)
// or a map index -> value. `where` keeps where each index was given, for the checks that
// compare fields with each other afterwards.
template <typename T> struct PerIndex {
  Where field;
  std::array<T, 8> value{};
  std::array<Where, 8> where;
};

enum class Unnamed { kError, kDefault };

template <typename T, typename ReadValue>
Result<PerIndex<T>> read_per_index(const Field& f, const Range& index, Unnamed unnamed, T fallback,
                                   ReadValue read_value) {
  PerIndex<T> out{f, {}, {}};
  out.value.fill(fallback);
  out.where.fill(f);
  std::string noun(index.noun);
  if (f.node.IsSequence()) {
    if (f.node.size() != 8) {
      return invalid(f, "a list must have exactly 8 values, one per " + noun + ", not " +
                            std::to_string(f.node.size()));
    }
    for (std::size_t i = 0; i < 8; ++i) {
      Field item = list_item(f, i);
      out.where[i] = item;
      FABRIC_ASSIGN_OR_RETURN(out.value[i], read_value(item));
    }
    return out;
  }
  if (!f.node.IsMap()) {
    return invalid(f, "must be a list of 8 values or a map " + noun + " -> value, not " +
                          describe(f.node));
  }
  FABRIC_ASSIGN_OR_RETURN(auto entries, map_entries(f, noun + " -> value"));
  std::bitset<8> named;
  for (const Entry& e : entries) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t i, read_number(e.key, index));
    if (named[i]) {
      return invalid(e.key, noun + " " + std::to_string(i) + " is given twice (first on line " +
                                line_of(out.where[i].mark) + ")");
    }
    named.set(i);
    out.where[i] = e.value;
    FABRIC_ASSIGN_OR_RETURN(out.value[i], read_value(e.value));
  }
  if (unnamed == Unnamed::kError && !named.all()) {
    std::string missing;
    for (std::size_t i = 0; i < 8; ++i)
      if (!named[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    return invalid(f, "a map must name every " + noun + " 0-7; missing " + missing);
  }
  return out;
}

Result<uint8_t> read_tsa(const Field& f) {
  static const std::map<std::string, Tsa, std::less<>> kWords = {{"strict", Tsa::kStrict},
                                                                 {"cbs", Tsa::kCbShaper},
                                                                 {"ets", Tsa::kEts},
                                                                 {"vendor", Tsa::kVendor}};
  auto it = f.node.IsScalar() ? kWords.find(f.node.Scalar()) : kWords.end();
  if (it == kWords.end()) {
    return invalid(f, "TSA must be strict, cbs, ets or vendor, not " + describe(f.node));
  }
  return static_cast<uint8_t>(it->second);
}

Result<uint32_t> read_buffer_size(const Field& f) {
  if (!f.node.IsScalar())
    return invalid(f, "buffer size must be a number, not " + describe(f.node));
  auto bytes = units::parse_size(f.node.Scalar(), "");
  if (!bytes.ok()) return invalid(f, "buffer size " + bytes.error().detail());
  if (*bytes > UINT32_MAX) return invalid(f, "buffer size " + f.node.Scalar() + " is over 4 GiB");
  return static_cast<uint32_t>(*bytes);
}

// "25Gbit", "2.5 gbit", "100Mbit", "800000bit", or a bare number of kbit/s. Units are decimal,
// as tc writes rates; bytes-per-second units (tc's "bps") are refused, being easy to misread.
// Computed exactly in decimal: 0.1Gbit is 100000 kbit/s, not 99999.
Result<uint64_t> read_rate_kbit(const Field& f) {
  static const std::map<std::string, int, std::less<>> kKbitExponent = {
      {"", 0}, {"bit", -3}, {"kbit", 0}, {"mbit", 3}, {"gbit", 6}, {"tbit", 9}};
  std::string text;
  for (char c : f.node.IsScalar() ? f.node.Scalar() : "")
    if (c != ' ') text += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t split = std::min(text.find_first_not_of("0123456789."), text.size());
  auto unit = kKbitExponent.find(text.substr(split));
  std::string digits = text.substr(0, split);
  int exp10 = unit == kKbitExponent.end() ? 0 : unit->second;
  if (std::size_t dot = digits.find('.'); dot != std::string::npos) {
    exp10 -= static_cast<int>(digits.size() - dot - 1);
    digits.erase(dot, 1);
  }
  std::optional<uint64_t> value = parse_integer(digits); // refuses a second '.'
  if (unit == kKbitExponent.end() || !value) {
    return invalid(f, "must be a rate such as 25Gbit, 100Mbit or a number of kbit/s, not " +
                          describe(f.node));
  }
  for (; exp10 > 0; --exp10) {
    if (*value > UINT64_MAX / 10) return invalid(f, "rate " + f.node.Scalar() + " is too large");
    *value *= 10;
  }
  for (; exp10 < 0; ++exp10) {
    if (*value % 10 != 0) {
      return invalid(f, "rate " + f.node.Scalar() + " is not a whole number of kbit/s");
    }
    *value /= 10;
  }
  return *value;
}

Result<void> parse_pfc(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"prio_pfc", "delay"}));
  FABRIC_TRY(read_into(s, "prio_pfc", out.pfc_en, read_priority_set));
  return read_into(s, "delay", out.pfc_delay, number_as<uint16_t>(kDelay));
}

constexpr auto kTsaStrict = static_cast<uint8_t>(Tsa::kStrict);
constexpr auto kTsaEts = static_cast<uint8_t>(Tsa::kEts);

// The ETS fields must agree with each other, or the NIC refuses them (shares that do not
// sum to 100) or the traffic stalls (a priority in an ets class with 0%).
Result<void> check_ets(const std::optional<PerIndex<uint8_t>>& prio_tc,
                       const std::optional<PerIndex<uint8_t>>& tc_bw,
                       const std::optional<PerIndex<uint8_t>>& tc_tsa, DesiredConfig& out) {
  if (!tc_bw && !tc_tsa) return Ok();
  PerTc<uint8_t> tsa{};
  for (int tc = 0; tc < kTrafficClasses; ++tc) {
    if (tc_tsa)
      tsa[tc] = tc_tsa->value[tc];
    else
      tsa[tc] = tc_bw->value[tc] > 0 ? kTsaEts : kTsaStrict;
  }
  out.tc_tsa = tsa;
  std::string ets_tcs;
  for (int tc = 0; tc < kTrafficClasses; ++tc)
    if (tsa[tc] == kTsaEts) ets_tcs += (ets_tcs.empty() ? "" : ", ") + std::to_string(tc);
  if (!tc_bw) {
    if (ets_tcs.empty()) return Ok();
    return invalid(tc_tsa->field, "TCs " + ets_tcs +
                                      " are ets but there is no ets.tc_bw to give them shares "
                                      "summing to 100");
  }
  int sum = 0;
  for (int tc = 0; tc < kTrafficClasses; ++tc) {
    int share = tc_bw->value[tc];
    if (tsa[tc] == kTsaStrict && share != 0) {
      return invalid(tc_bw->where[tc], "TC " + std::to_string(tc) + " is strict, so its share " +
                                           "must be 0, not " + std::to_string(share) + "%");
    }
    if (tsa[tc] == kTsaEts) sum += share;
  }
  if (!ets_tcs.empty() && sum != 100) {
    return invalid(tc_bw->field, "ETS shares sum to " + std::to_string(sum) + ", not 100");
  }
  if (!prio_tc) return Ok();
  for (int prio = 0; prio < kPriorities; ++prio) {
    int tc = prio_tc->value[prio];
    if (tsa[tc] == kTsaEts && tc_bw->value[tc] == 0) {
      return invalid(prio_tc->where[prio], "priority " + std::to_string(prio) + " maps to tc " +
                                               std::to_string(tc) + ", which has 0% bandwidth");
    }
  }
  return Ok();
}

Result<void> parse_ets(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"willing", "prio_tc", "tc_bw", "tc_tsa"}));
  FABRIC_TRY(read_into(s, "willing", out.ets_willing, read_bool));
  std::optional<PerIndex<uint8_t>> prio_tc, tc_bw, tc_tsa;
  if (const Field* field = get(s, "prio_tc")) {
    FABRIC_ASSIGN_OR_RETURN(prio_tc, read_per_index(*field, kPriority, Unnamed::kError, uint8_t{0},
                                                    number_as<uint8_t>(kTc)));
    out.prio_tc = prio_tc->value;
  }
  if (const Field* field = get(s, "tc_bw")) {
    FABRIC_ASSIGN_OR_RETURN(tc_bw, read_per_index(*field, kTc, Unnamed::kDefault, uint8_t{0},
                                                  number_as<uint8_t>(kShare)));
    out.tc_bw = tc_bw->value;
  }
  if (const Field* field = get(s, "tc_tsa")) {
    FABRIC_ASSIGN_OR_RETURN(tc_tsa,
                            read_per_index(*field, kTc, Unnamed::kDefault, kTsaStrict, read_tsa));
  }
  return check_ets(prio_tc, tc_bw, tc_tsa, out);
}

struct AppTable {
  std::string_view key;
  AppSelector selector;
  Range protocol;
};
constexpr AppTable kAppTables[] = {
    {"dscp_prio", AppSelector::kDscp, kDscp},
    {"ethtype_prio", AppSelector::kEthertype, kEthertype},
    {"stream_port_prio", AppSelector::kStream, kPort},
    {"dgram_port_prio", AppSelector::kDgram, kPort},
    {"port_prio", AppSelector::kAny, kPort},
};

// One selector's map protocol -> priority. Keys are compared as numbers, so 0x8915 and
// 35093 are the same ethertype given twice.
Result<void> read_app_table(const Field& f, const AppTable& table, std::vector<AppEntry>& apps) {
  FABRIC_ASSIGN_OR_RETURN(auto entries,
                          map_entries(f, std::string(table.protocol.noun) + " -> priority"));
  std::map<uint64_t, YAML::Mark> seen;
  for (const Entry& e : entries) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t protocol, read_number(e.key, table.protocol));
    if (auto [it, fresh] = seen.emplace(protocol, e.key.mark); !fresh) {
      return invalid(e.key, std::string(table.protocol.noun) + " " +
                                show(protocol, table.protocol) + " is given twice (first on line " +
                                line_of(it->second) + ")");
    }
    FABRIC_ASSIGN_OR_RETURN(uint8_t prio, number_as<uint8_t>(kPriority)(e.value));
    apps.push_back({static_cast<uint8_t>(table.selector), prio, static_cast<uint16_t>(protocol)});
  }
  return Ok();
}

Result<void> parse_app(const Field& f, DesiredConfig& out) {
  std::vector<std::string_view> allowed;
  for (const AppTable& table : kAppTables)
    allowed.push_back(table.key);
  allowed.push_back("exclusive");
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, allowed));
  for (const AppTable& table : kAppTables) {
    if (const Field* field = get(s, table.key)) FABRIC_TRY(read_app_table(*field, table, out.apps));
  }
  std::sort(out.apps.begin(), out.apps.end());
  if (const Field* exclusive = get(s, "exclusive")) {
    FABRIC_ASSIGN_OR_RETURN(out.apps_exclusive, read_bool(*exclusive));
  }
  return Ok();
}

// read_per_index for fields that are only stored: the values without their positions.
template <typename T, typename ReadValue>
auto values_of(const Range& index, Unnamed unnamed, T fallback, ReadValue read_value) {
  return [=](const Field& f) -> Result<std::array<T, 8>> {
    FABRIC_ASSIGN_OR_RETURN(auto per_index,
                            read_per_index(f, index, unnamed, fallback, read_value));
    return per_index.value;
  };
}

Result<void> parse_buffer(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"prio_buffer", "buffer_size"}));
  FABRIC_TRY(
      read_into(s, "prio_buffer", out.prio2buffer,
                values_of(kPriority, Unnamed::kError, uint8_t{0}, number_as<uint8_t>(kBuffer))));
  return read_into(s, "buffer_size", out.buffer_size,
                   values_of(kBuffer, Unnamed::kDefault, uint32_t{0}, read_buffer_size));
}

Result<void> parse_maxrate(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"tc_maxrate"}));
  return read_into(s, "tc_maxrate", out.tc_maxrate,
                   values_of(kTc, Unnamed::kDefault, uint64_t{0}, read_rate_kbit));
}

Result<void> parse_ecn(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"roce_np", "roce_rp"}));
  FABRIC_TRY(read_into(s, "roce_np", out.ecn_np, read_priority_set));
  return read_into(s, "roce_rp", out.ecn_rp, read_priority_set);
}

// The exact strings rdma_cm's configfs default_roce_mode accepts.
Result<std::string> read_roce_mode(const Field& f) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, read_text(f));
  if (text != "RoCE v2" && text != "IB/RoCE v1") {
    return invalid(f, "must be \"RoCE v2\" or \"IB/RoCE v1\", not '" + text + "'");
  }
  return text;
}

Result<void> parse_rdma(const Field& f, DesiredConfig& out) {
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(f, {"device", "cm_default_tos",
                                                      "cm_default_roce_mode", "traffic_class"}));
  auto read_rdma_device = [](const Field& v) {
    return read_device_name(v, "RDMA device name", 63);
  };
  FABRIC_TRY(read_into(s, "device", out.rdma_device, read_rdma_device));
  FABRIC_TRY(read_into(s, "cm_default_tos", out.cm_default_tos, number_as<uint8_t>(kTos)));
  FABRIC_TRY(read_into(s, "cm_default_roce_mode", out.cm_default_roce_mode, read_roce_mode));
  return read_into(s, "traffic_class", out.rdma_traffic_class, number_as<uint8_t>(kTrafficClass));
}

Result<Profile> parse_document(const YAML::Node& root) {
  Field top{{"profile", root.Mark(), "profile"}, root};
  if (!root.IsMap()) {
    return invalid(top, "must be a map of sections (pfc, ets, app, ...), not " + describe(root));
  }
  top.path.clear(); // top-level keys are paths of their own: "pfc", not "profile.pfc"
  FABRIC_ASSIGN_OR_RETURN(Section s, open_section(top, {"name", "devices", "pfc", "ets", "app",
                                                        "buffer", "maxrate", "ecn", "rdma"}));
  Profile profile;
  if (const Field* name = get(s, "name")) {
    FABRIC_ASSIGN_OR_RETURN(profile.name, read_text(*name));
    if (profile.name.empty()) return invalid(*name, "must not be empty");
  }
  if (const Field* devices = get(s, "devices")) {
    if (!devices->node.IsSequence()) {
      return invalid(*devices, "must be a list of netdev names, not " + describe(devices->node));
    }
    for (std::size_t i = 0; i < devices->node.size(); ++i) {
      Field item = list_item(*devices, i);
      FABRIC_ASSIGN_OR_RETURN(std::string dev, read_device_name(item, "netdev name", 15));
      if (std::find(profile.devices.begin(), profile.devices.end(), dev) != profile.devices.end())
        return invalid(item, "netdev " + dev + " is listed twice");
      profile.devices.push_back(dev);
    }
  }
  using SectionParser = Result<void> (*)(const Field&, DesiredConfig&);
  const std::pair<std::string_view, SectionParser> kSections[] = {
      {"pfc", parse_pfc},         {"ets", parse_ets}, {"app", parse_app},  {"buffer", parse_buffer},
      {"maxrate", parse_maxrate}, {"ecn", parse_ecn}, {"rdma", parse_rdma}};
  for (const auto& [key, parse] : kSections) {
    if (const Field* field = get(s, key)) FABRIC_TRY(parse(*field, profile.config));
  }
  return profile;
}

} // namespace

Result<Profile> parse_profile(const std::string& text, const std::string& source_name) {
  FABRIC_ASSIGN_OR_RETURN(std::vector<YAML::Node> documents,
                          yaml::parse_documents(text, source_name));
  Result<Profile> profile = [&]() -> Result<Profile> {
    if (documents.empty() || documents[0].IsNull()) {
      return Error(ErrorCode::kInvalidConfig, "profile (line 1)",
                   "is empty; expected a map of sections (pfc, ets, app, ...)");
    }
    if (documents.size() > 1) {
      return invalid({"profile", documents[1].Mark()},
                     "has a second YAML document; a profile is one document");
    }
    return parse_document(documents[0]);
  }();
  if (!profile.ok() && !source_name.empty()) return std::move(profile).context(source_name);
  return profile;
}

Result<Profile> load_profile(const std::string& path) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, read_bounded_file(path, kMaxProfileBytes)
                                                 .context("reading profile " + path));

  FABRIC_ASSIGN_OR_RETURN(Profile profile, parse_profile(text, path));
  if (profile.name.empty()) {
    // "deploy/pfc/roce-lossless.yaml" -> "roce-lossless"
    std::string name = path.substr(path.find_last_of('/') + 1);
    for (std::string_view ext : {".yaml", ".yml", ".json"}) {
      if (name.size() > ext.size() && name.ends_with(ext)) name.resize(name.size() - ext.size());
    }
    profile.name = name;
  }
  return profile;
}

} // namespace fabric::pfc
