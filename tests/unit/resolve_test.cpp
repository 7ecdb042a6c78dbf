// resolve_address: a name lookup that does not answer in time is cut at the caller's
// deadline (a node whose DNS is down must not hang a probe), and everything else passes
// through as getaddrinfo gives it.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <future>

#include "common/resolve.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

addrinfo stream_hints() {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  return hints;
}

std::string first_ipv4(const addrinfo* ai) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr, text,
            sizeof text);
  return text;
}

TEST(Resolve, ANumericAddressNeverReachesTheResolver) {
  auto found = resolve_address("192.0.2.7", "80", stream_hints(), 1s,
                               [](const char*, const char*, const addrinfo*, addrinfo**) {
                                 ADD_FAILURE() << "the resolver was asked";
                                 return EAI_FAIL;
                               });
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(first_ipv4(found->get()), "192.0.2.7");
}

TEST(Resolve, ALookupThatNeverAnswersIsCutAtTheDeadline) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> lookup_finished = finished->get_future();
  auto found =
      resolve_address("peer.fabric.test", "4791", stream_hints(), 50ms,
                      [released, finished](const char*, const char*, const addrinfo*, addrinfo**) {
                        released.wait(); // a DNS server that never answers, until the test lets go
                        finished->set_value();
                        return EAI_AGAIN;
                      });
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code(), ErrorCode::kTimeout) << found.error().message();
  EXPECT_NE(found.error().message().find("peer.fabric.test"), std::string::npos)
      << found.error().message();
  // The abandoned lookup finishes on its own thread once its resolver returns.
  release->set_value();
  EXPECT_EQ(lookup_finished.wait_for(10s), std::future_status::ready);
}

TEST(Resolve, AnUnknownNameIsNotFoundWithTheResolversReason) {
  auto found = resolve_address(
      "peer.fabric.test", "", stream_hints(), 5s,
      [](const char*, const char*, const addrinfo*, addrinfo**) { return EAI_NONAME; });
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(found.error().message().find(gai_strerror(EAI_NONAME)), std::string::npos)
      << found.error().message();
}

TEST(Resolve, AnAnswerInTimeIsPassedThrough) {
  auto found = resolve_address(
      "peer.fabric.test", "", stream_hints(), 5s,
      [](const char*, const char* service, const addrinfo* hints, addrinfo** result) {
        return ::getaddrinfo("198.51.100.4", service, hints, result);
      });
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(first_ipv4(found->get()), "198.51.100.4");
}

} // namespace
} // namespace fabric
