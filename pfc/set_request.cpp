#include "pfc/set_request.h"

#include <algorithm>
#include <charconv>

#include "libs/dcb/dcb_format.h"

namespace fabric::pfc {
namespace {

struct Item {
  std::vector<int> keys; // "all" expands to 0..7
  std::string value;
};

Error bad_item(const char* option, const std::string& item, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, std::string(option) + " " + item, why);
}

Result<int> parse_int(const std::string& text, const char* option, const std::string& item, int min,
                      int max, const char* what) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return bad_item(option, item, std::string(what) + " '" + text + "' is not a number");
  }
  if (value < min || value > max) {
    return bad_item(option, item,
                    std::string(what) + " " + text + " is out of range (" + std::to_string(min) +
                        "-" + std::to_string(max) + ")");
  }
  return value;
}

// "K:V" with K a number in [0, max_key] or "all".
Result<Item> parse_item(const std::string& item, const char* option, int max_key,
                        const char* key_name) {
  auto colon = item.find(':');
  if (colon == std::string::npos) return bad_item(option, item, "expected KEY:VALUE");
  Item out;
  std::string key = item.substr(0, colon);
  out.value = item.substr(colon + 1);
  if (key == "all") {
    for (int k = 0; k <= max_key; ++k)
      out.keys.push_back(k);
  } else {
    FABRIC_ASSIGN_OR_RETURN(int k, parse_int(key, option, item, 0, max_key, key_name));
    out.keys.push_back(k);
  }
  return out;
}

Result<bool> parse_on_off(const std::string& value, const char* option, const std::string& item) {
  if (value == "on") return true;
  if (value == "off") return false;
  return bad_item(option, item, "expected on or off, not '" + value + "'");
}

Error not_reported(const char* option, const char* part) {
  return Error(ErrorCode::kUnsupported, option,
               std::string("the device does not report ") + part + ", so it cannot be changed");
}

} // namespace

Result<DesiredConfig> desired_from_set(const SetRequest& request, const DcbState& current) {
  DesiredConfig desired;
  desired.apps_exclusive = false; // set adds; it never removes what it was not told to

  if (!request.prio_pfc.empty()) {
    if (!current.pfc) return not_reported("--prio-pfc", "PFC");
    uint8_t mask = current.pfc->pfc_en;
    for (const auto& item : request.prio_pfc) {
      FABRIC_ASSIGN_OR_RETURN(Item it, parse_item(item, "--prio-pfc", 7, "priority"));
      FABRIC_ASSIGN_OR_RETURN(bool on, parse_on_off(it.value, "--prio-pfc", item));
      for (int p : it.keys) {
        mask = static_cast<uint8_t>(on ? (mask | 1u << p) : (mask & ~(1u << p)));
      }
    }
    desired.pfc_en = mask;
  }
  if (request.pfc_delay) {
    if (!current.pfc) return not_reported("--pfc-delay", "PFC");
    desired.pfc_delay = *request.pfc_delay;
  }

  bool touches_ets = request.ets_willing || !request.prio_tc.empty() || !request.tc_bw.empty() ||
                     !request.tc_tsa.empty();
  if (touches_ets && !current.ets) return not_reported("--prio-tc/--tc-bw/--tc-tsa", "ETS");
  if (request.ets_willing) desired.ets_willing = *request.ets_willing;
  if (!request.prio_tc.empty()) {
    PerPriority<uint8_t> prio_tc = current.ets->prio_tc;
    for (const auto& item : request.prio_tc) {
      FABRIC_ASSIGN_OR_RETURN(Item it, parse_item(item, "--prio-tc", 7, "priority"));
      FABRIC_ASSIGN_OR_RETURN(int tc,
                              parse_int(it.value, "--prio-tc", item, 0, 7, "traffic class"));
      for (int p : it.keys)
        prio_tc[p] = static_cast<uint8_t>(tc);
    }
    desired.prio_tc = prio_tc;
  }
  if (!request.tc_bw.empty()) {
    PerTc<uint8_t> bw = current.ets->tc_tx_bw;
    for (const auto& item : request.tc_bw) {
      FABRIC_ASSIGN_OR_RETURN(Item it, parse_item(item, "--tc-bw", 7, "traffic class"));
      FABRIC_ASSIGN_OR_RETURN(int pct, parse_int(it.value, "--tc-bw", item, 0, 100, "share"));
      for (int tc : it.keys)
        bw[tc] = static_cast<uint8_t>(pct);
    }
    desired.tc_bw = bw;
  }
  if (!request.tc_tsa.empty()) {
    PerTc<uint8_t> tsa = current.ets->tc_tsa;
    for (const auto& item : request.tc_tsa) {
      FABRIC_ASSIGN_OR_RETURN(Item it, parse_item(item, "--tc-tsa", 7, "traffic class"));
      auto value = format::parse_tsa(it.value);
      if (!value) return bad_item("--tc-tsa", item, "expected strict, cbs, ets or vendor");
      for (int tc : it.keys)
        tsa[tc] = *value;
    }
    desired.tc_tsa = tsa;
  }
  for (const auto& item : request.dscp_prio) {
    FABRIC_ASSIGN_OR_RETURN(Item it, parse_item(item, "--dscp-prio", 63, "DSCP"));
    FABRIC_ASSIGN_OR_RETURN(int prio, parse_int(it.value, "--dscp-prio", item, 0, 7, "priority"));
    for (int dscp : it.keys) {
      desired.apps.push_back(AppEntry{static_cast<uint8_t>(AppSelector::kDscp),
                                      static_cast<uint8_t>(prio), static_cast<uint16_t>(dscp)});
    }
  }
  std::sort(desired.apps.begin(), desired.apps.end());
  return desired;
}

Result<void> check_set_request(const SetRequest& request) {
  // Against a device that reports every part, only the request itself can be wrong; the
  // same parsers as the real run, so the two cannot disagree.
  DcbState any;
  any.pfc.emplace();
  any.ets.emplace();
  FABRIC_TRY(desired_from_set(request, any));
  return Ok();
}

} // namespace fabric::pfc
