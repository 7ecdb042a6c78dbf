// Test hosts for the netns tier: named network namespaces and veth pairs that a test
// creates through the real kernel and that are always removed, also when the test fails
// (RAII), so no run leaves namespaces or links behind.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/result.h"

namespace fabric::testing {

// True when the process may create namespaces and links (CAP_NET_ADMIN and
// CAP_SYS_ADMIN); tests call GTEST_SKIP with skip_reason() otherwise.
bool can_manage_network();
std::string skip_reason();

// Runs a command (`ip ...`) and fails the test with its stderr if it fails.
Result<std::string> run_checked(const std::vector<std::string>& argv);

class TestNetwork {
public:
  TestNetwork(); // names are unique per process and instance: "fk<pid>x<n>..."
  ~TestNetwork();
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  // Creates a named namespace and returns its path (/var/run/netns/NAME).
  std::string add_namespace(const std::string& suffix);
  // Creates a veth pair; each end goes into `ns_a`/`ns_b` ("" leaves it on the host).
  // Returns the two names.
  std::pair<std::string, std::string>
  add_veth(const std::string& suffix, const std::string& ns_a = "", const std::string& ns_b = "");

  std::string ns_name(const std::string& suffix) const { return prefix_ + suffix; }
  const std::string& prefix() const { return prefix_; }
  const std::vector<std::string>& namespaces() const { return namespaces_; }

private:
  std::string prefix_;
  std::vector<std::string> namespaces_;
  std::vector<std::string> host_links_;
};

bool namespace_exists(const std::string& name);
bool host_link_exists(const std::string& name);

} // namespace fabric::testing
