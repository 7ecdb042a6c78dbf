// DCB attributes against the kernel's struct layouts, and whole netlink messages built
// and decoded without a socket.
#include <cstring>

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>

#include <gtest/gtest.h>

#include "libs/dcb/dcb_codec.h"
#include "libs/dcb/dcb_netlink.h"

namespace fabric::pfc {
namespace {

PfcConfig roce_pfc() {
  PfcConfig pfc;
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  pfc.delay = 32;
  pfc.requests[3] = 1234567890123ull;
  pfc.indications[3] = 42;
  return pfc;
}

EtsConfig roce_ets() {
  EtsConfig ets;
  ets.ets_cap = 8;
  ets.tc_tx_bw = {50, 0, 0, 50, 0, 0, 0, 0};
  ets.tc_tsa = {2, 0, 0, 2, 0, 0, 0, 0};
  ets.prio_tc = {0, 0, 0, 3, 0, 0, 6, 0};
  return ets;
}

TEST(PfcCodec, PfcMatchesTheKernelStructByteForByte) {
  ieee_pfc k = codec::to_kernel(roce_pfc());
  EXPECT_EQ(k.pfc_en, 0x08);
  EXPECT_EQ(k.delay, 32);
  EXPECT_EQ(k.requests[3], 1234567890123ull);
  auto back = codec::decode_pfc(&k, sizeof k, "DCB_ATTR_IEEE_PFC");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->pfc_en, 0x08);
  EXPECT_EQ(back->indications[3], 42u);
}

TEST(PfcCodec, WrongLengthIsRefusedAndNamed) {
  uint8_t short_payload[58] = {};
  auto ets = codec::decode_ets(short_payload, sizeof short_payload, "DCB_ATTR_IEEE_ETS");
  ASSERT_FALSE(ets.ok());
  EXPECT_EQ(ets.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(ets.error().message(),
            "DCB attribute DCB_ATTR_IEEE_ETS: payload is 58 bytes, the kernel struct is 59");
  EXPECT_FALSE(codec::decode_app(short_payload, 3, "DCB_ATTR_IEEE_APP").ok());
  EXPECT_FALSE(codec::decode_maxrate(short_payload, 56, "DCB_ATTR_IEEE_MAXRATE").ok());
  EXPECT_FALSE(codec::decode_buffer(short_payload, 40, "DCB_ATTR_DCB_BUFFER").ok());
}

TEST(PfcCodec, AppEntryLayoutIsSelectorPriorityProtocol) {
  dcb_app k = codec::to_kernel(AppEntry{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26});
  uint8_t raw[4];
  std::memcpy(raw, &k, sizeof raw);
  EXPECT_EQ(raw[0], 5);
  EXPECT_EQ(raw[1], 3);
  uint16_t protocol;
  std::memcpy(&protocol, raw + 2, 2);
  EXPECT_EQ(protocol, 26);
}

TEST(PfcCodec, InbandStatusIsTheNegativeErrnoTruncatedToAByte) {
  EXPECT_EQ(codec::errno_from_inband_status(0), 0);
  EXPECT_EQ(codec::errno_from_inband_status(static_cast<uint8_t>(-EINVAL)), EINVAL);
  EXPECT_EQ(codec::errno_from_inband_status(static_cast<uint8_t>(-EOPNOTSUPP)), EOPNOTSUPP);
}

TEST(PfcMessages, IeeeSetCarriesEveryChangedStructAndAppEntry) {
  DcbChange change;
  change.pfc = roce_pfc();
  change.ets = roce_ets();
  MaxRate maxrate;
  maxrate.tc_maxrate[3] = 25'000'000;
  change.maxrate = maxrate;
  BufferConfig buffer;
  buffer.prio2buffer[3] = 1;
  buffer.buffer_size[1] = 262144;
  change.buffer = buffer;
  std::vector<AppEntry> apps = {{5, 3, 26}, {5, 6, 48}};
  auto bytes = detail::build_ieee_request("eth2", DCB_CMD_IEEE_SET, change, apps);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes->data());
  EXPECT_EQ(hdr->nlmsg_type, RTM_SETDCB);
  const auto* dcb = reinterpret_cast<const dcbmsg*>(bytes->data() + NLMSG_HDRLEN);
  EXPECT_EQ(dcb->cmd, DCB_CMD_IEEE_SET);

  auto state = detail::decode_state(hdr);
  ASSERT_TRUE(state.ok()) << state.error().message();
  ASSERT_TRUE(state->pfc && state->ets && state->maxrate && state->buffer);
  EXPECT_EQ(state->pfc->pfc_en, 0x08);
  EXPECT_EQ(state->ets->tc_tx_bw, roce_ets().tc_tx_bw);
  EXPECT_EQ(state->ets->prio_tc, roce_ets().prio_tc);
  EXPECT_EQ(state->maxrate->tc_maxrate[3], 25'000'000u);
  EXPECT_EQ(state->buffer->buffer_size[1], 262144u);
  EXPECT_EQ(state->apps, apps);
  EXPECT_FALSE(state->peer_pfc.has_value());
}

TEST(PfcMessages, OnlyWhatChangesIsSent) {
  DcbChange change;
  change.pfc = roce_pfc();
  auto bytes = detail::build_ieee_request("eth2", DCB_CMD_IEEE_SET, change, {});
  ASSERT_TRUE(bytes.ok());
  auto state = detail::decode_state(reinterpret_cast<const nlmsghdr*>(bytes->data()));
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->pfc.has_value());
  EXPECT_FALSE(state->ets.has_value());
  EXPECT_FALSE(state->maxrate.has_value());
  EXPECT_TRUE(state->apps.empty());
}

} // namespace
} // namespace fabric::pfc
