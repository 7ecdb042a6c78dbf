// The one MAC parser and the one PCI-address parser of the tree.
#include <gtest/gtest.h>

#include "common/hw_address.h"

namespace fabric {
namespace {

TEST(HwAddress, MacsInEitherCaseAndBackLowerCase) {
  auto mac = parse_mac("02:AB:cd:00:0F:ff");
  ASSERT_TRUE(mac.ok()) << mac.error().message();
  EXPECT_EQ(*mac, (MacAddress{0x02, 0xab, 0xcd, 0x00, 0x0f, 0xff}));
  EXPECT_EQ(format_mac(*mac), "02:ab:cd:00:0f:ff");
  EXPECT_TRUE(is_unicast_mac(*mac));
}

TEST(HwAddress, MalformedMacsAreNamed) {
  for (const char* bad : {"", "02:00:00:00:00", "02-00-00-00-00-01", "02:00:00:00:00:0g",
                          "02:00:00:00:00:001", "2:00:00:00:00:01:", "+2:00:00:00:00:01"}) {
    auto mac = parse_mac(bad);
    ASSERT_FALSE(mac.ok()) << bad;
    EXPECT_EQ(mac.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(mac.error().message().find(std::string("'") + bad + "'"), std::string::npos)
        << mac.error().message();
  }
}

TEST(HwAddress, GroupAndZeroMacsAreNotUnicast) {
  EXPECT_FALSE(is_unicast_mac(*parse_mac("01:00:5e:00:00:01")));
  EXPECT_FALSE(is_unicast_mac(*parse_mac("ff:ff:ff:ff:ff:ff")));
  EXPECT_FALSE(is_unicast_mac(*parse_mac("00:00:00:00:00:00")));
  EXPECT_TRUE(is_unicast_mac(*parse_mac("00:00:00:00:00:01")));
}

TEST(HwAddress, PciAddressesAsSysfsNamesThem) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {{"0000:3b:00.1", "0000:3b:00.1"},      {"3b:00.1", "0000:3b:00.1"},
               {"0000:AF:1f.7", "0000:af:1f.7"},      {"10000:01:00.0", "10000:01:00.0"},
               {"00010000:01:00.0", "10000:01:00.0"}, {"00000:3b:00.0", "0000:3b:00.0"}};
  for (const auto& c : cases) {
    auto pci = normalize_pci_address(c.in);
    ASSERT_TRUE(pci.ok()) << c.in << ": " << pci.error().message();
    EXPECT_EQ(*pci, c.out);
  }
}

TEST(HwAddress, MalformedPciAddressesAreNamed) {
  for (const char* bad : {"", "3b:00", "0000:3b:00", "000:3b:00.1", "123456789:3b:00.1",
                          "0000:3b:20.0", "0000:3b:00.8", "0000:3g:00.0", "0000:3b:00.1/",
                          "0000:3b:00:0", "mlx5_core.sf.2", "../../x"}) {
    auto pci = normalize_pci_address(bad);
    ASSERT_FALSE(pci.ok()) << bad;
    EXPECT_EQ(pci.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(pci.error().message().find("DDDD:BB:DD.F"), std::string::npos);
  }
}

} // namespace
} // namespace fabric
