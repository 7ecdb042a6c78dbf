#include "exporters/gzip.h"

#include <zlib.h>

namespace fabric::exporters {

Result<std::string> gzip_compress(std::string_view data) {
  z_stream zs{};
  // 16 + MAX_WBITS: a gzip header and trailer instead of zlib's; level 1, because the
  // exposition is repetitive text that fast compression already shrinks well.
  if (deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Error(ErrorCode::kSystem, "deflateInit2", zs.msg ? zs.msg : "");
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const std::string message = zs.msg ? zs.msg : "";
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Error(ErrorCode::kSystem, "deflate", message);
  return out;
}

} // namespace fabric::exporters
