// gzip (RFC 1952) of a whole buffer through zlib, for /metrics responses to scrapers that
// send Accept-Encoding: gzip (Prometheus does; 10,000 series shrink about tenfold).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::exporters {

Result<std::string> gzip_compress(std::string_view data);

} // namespace fabric::exporters
