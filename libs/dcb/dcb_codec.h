// Conversions between the DCB model (dcb_config.h) and the kernel's UAPI structs from
// <linux/dcbnl.h>. The netlink attributes carry these structs verbatim, so their sizes
// must match the kernel's exactly: decoding checks the attribute's length against the
// struct and refuses anything else.
#pragma once

#include <cstddef>
#include <vector>

#include <linux/dcbnl.h>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"

namespace fabric::pfc::codec {

ieee_pfc to_kernel(const PfcConfig& pfc);
ieee_ets to_kernel(const EtsConfig& ets);
dcb_app to_kernel(const AppEntry& app);
dcbnl_buffer to_kernel(const BufferConfig& buffer);
ieee_maxrate to_kernel(const MaxRate& maxrate);

// Each decodes one attribute payload; `attribute` names it in the error when the length
// does not match the kernel struct.
Result<PfcConfig> decode_pfc(const void* data, std::size_t len, const char* attribute);
Result<EtsConfig> decode_ets(const void* data, std::size_t len, const char* attribute);
Result<AppEntry> decode_app(const void* data, std::size_t len, const char* attribute);
Result<BufferConfig> decode_buffer(const void* data, std::size_t len, const char* attribute);
Result<MaxRate> decode_maxrate(const void* data, std::size_t len, const char* attribute);

// The IEEE set/del reply carries its outcome as one byte: the negative errno truncated
// to u8 (dcbnl_ieee_set: nla_put_u8(skb, DCB_ATTR_IEEE, err)). 0 is success.
int errno_from_inband_status(uint8_t status);

} // namespace fabric::pfc::codec
