#include "nccltest/group.h"

#include <cstring>
#include <unistd.h>

namespace fabric::nccltest {
namespace {

class SingleGroup final : public Group {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Result<std::vector<std::string>> allgather(std::string_view mine) override {
    return std::vector<std::string>{std::string(mine)};
  }
  Result<std::string> broadcast(std::string_view mine) override { return std::string(mine); }
  [[noreturn]] void abort(int exit_code, const std::string&) override { ::_exit(exit_code); }
};

} // namespace

std::unique_ptr<Group> make_single_group() {
  return std::make_unique<SingleGroup>();
}

Result<std::vector<double>> allgather_doubles(Group& group, const std::vector<double>& mine) {
  std::string bytes(mine.size() * sizeof(double), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> all, group.allgather(bytes));
  std::vector<double> out;
  out.reserve(all.size() * mine.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != bytes.size()) {
      return Error(ErrorCode::kInternal, "exchanging numbers",
                   "rank " + std::to_string(r) + " sent " + std::to_string(all[r].size()) +
                       " bytes, expected " + std::to_string(bytes.size()));
    }
    const std::size_t n = mine.size();
    out.resize(out.size() + n);
    if (n) std::memcpy(out.data() + r * n, all[r].data(), bytes.size());
  }
  return out;
}

} // namespace fabric::nccltest
