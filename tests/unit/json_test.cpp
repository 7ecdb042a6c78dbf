#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/strings.h"

namespace fabric::json {
namespace {

TEST(Json, WrittenDocumentsAreValidUtf8WhateverTheStringsHold) {
  Writer w(false);
  w.begin_object().field("name", std::string("roce\xff\x80")).field("caf\xc3\xa9", "ok");
  w.field(std::string("bad\xfe"), 1).end_object();
  const std::string text = w.str();
  EXPECT_EQ(text, "{\"name\":\"roce\\\\xff\\\\x80\",\"caf\xc3\xa9\":\"ok\",\"bad\\\\xfe\":1}\n");
  auto back = parse(text, "written");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_STREQ((*back)["name"].GetString(), "roce\\xff\\x80");

  // A document built in memory (a profile's name read from a file) is written alike.
  rapidjson::Document doc(rapidjson::kObjectType);
  doc.AddMember(rapidjson::Value("k\xc0", doc.GetAllocator()),
                rapidjson::Value("v\xed\xa0\x80", doc.GetAllocator()), doc.GetAllocator());
  for (bool pretty : {false, true}) {
    const std::string out = to_string(doc, pretty);
    EXPECT_TRUE(is_valid_utf8(out)) << out;
    auto reread = parse(out, "to_string");
    ASSERT_TRUE(reread.ok()) << reread.error().message();
    EXPECT_STREQ((*reread)["k\\xc0"].GetString(), "v\\xed\\xa0\\x80") << out;
  }
}

TEST(Json, ParseErrorsNameTheDocumentLineAndColumn) {
  auto doc = parse("{\n  \"a\": 1,\n  \"b\" 2\n}", "config");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(doc.error().message(),
            "config: line 3, column 7: Missing a colon after a name of object member.");
}

// A string that is not UTF-8 is no JSON: refused where it starts, so that nothing read can
// come out of a writer (which escapes such bytes) as another string than went in.
TEST(Json, AStringThatIsNotUtf8IsRefused) {
  auto doc = parse("{\"domain\": \"cluster\xff\xfe\"}", "result");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code(), ErrorCode::kDecode);
  EXPECT_NE(doc.error().message().find("result: line 1"), std::string::npos)
      << doc.error().message();
  EXPECT_TRUE(parse("{\"domain\": \"caf\xc3\xa9\"}", "result").ok()); // UTF-8 is fine
}

TEST(Json, TrailingGarbageIsAnError) {
  auto doc = parse("{} x", "stdin");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message().find("line 1, column 4"), std::string::npos)
      << doc.error().message();
}

std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(Json, NestingUpToTheLimitParses) {
  auto doc = parse(nested_arrays(kMaxDepth), "message");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const rapidjson::Value* v = &*doc;
  std::size_t depth = 0;
  while (v->IsArray()) {
    ++depth;
    if (v->Empty()) break;
    v = &(*v)[0];
  }
  EXPECT_EQ(depth, kMaxDepth);
}

TEST(Json, NestingBeyondTheLimitIsRefusedWhereItStarts) {
  auto doc = parse(nested_arrays(kMaxDepth + 1), "message from client 10.0.0.2:4711");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(doc.error().message(), "message from client 10.0.0.2:4711: line 1, column 65: arrays "
                                   "and objects nest deeper than 64 levels");
  // Objects count the same as arrays, and the limit is the caller's to lower.
  auto objects = parse(R"({"a":{"b":{"c":1}}})", "state", 2);
  ASSERT_FALSE(objects.ok());
  EXPECT_NE(objects.error().message().find("nest deeper than 2 levels"), std::string::npos)
      << objects.error().message();
  EXPECT_TRUE(parse(R"({"a":{"b":1},"c":[1,2]})", "state", 2).ok());
}

// A recursive parser overflows its stack long before a megabyte of brackets: this must be
// an error, not a crash, whatever the thread's stack size.
TEST(Json, AMegabyteOfOpenBracketsIsAnErrorNotACrash) {
  std::string objects;
  while (objects.size() < (1u << 20))
    objects += "{\"a\":";
  for (const std::string& text : {std::string(1 << 20, '['), objects}) {
    auto doc = parse(text, "frame");
    ASSERT_FALSE(doc.ok());
    EXPECT_NE(doc.error().message().find("nest deeper than 64 levels"), std::string::npos)
        << doc.error().message();
  }
  // Unlimited depth on the iterative parser: the input's own error, still no crash.
  auto unlimited = parse(std::string(1 << 20, '['), "frame", SIZE_MAX);
  ASSERT_FALSE(unlimited.ok());
  EXPECT_NE(unlimited.error().message().find("line 1, column 1048577"), std::string::npos)
      << unlimited.error().message();
}

TEST(Json, EmptyInputIsAnError) {
  EXPECT_FALSE(parse("", "stdin").ok());
}

TEST(Json, FieldErrorsNameTheFullPath) {
  auto doc = parse(R"({"ipam": {"type": 5, "subnet": "10.0.0.0/24"}, "mtu": "big"})", "c");
  ASSERT_TRUE(doc.ok());
  auto ipam = get_object(*doc, "", "ipam");
  ASSERT_TRUE(ipam.ok());
  auto type = get_string(**ipam, "ipam", "type");
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.error().message(), "ipam.type: must be a string");
  EXPECT_EQ(type.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_EQ(*get_string(**ipam, "ipam", "subnet"), "10.0.0.0/24");
  auto mtu = get_optional_int(*doc, "", "mtu");
  ASSERT_FALSE(mtu.ok());
  EXPECT_EQ(mtu.error().message(), "mtu: must be an integer");
  auto missing = get_string(*doc, "", "name");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "name: is required");
  auto absent = get_optional_bool(*doc, "", "debug");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
}

TEST(Json, FindMemberReadsNullAsAbsentOnlyWhenAskedTo) {
  auto doc = parse(R"({"set": 1, "unset": null})", "config");
  ASSERT_TRUE(doc.ok());
  ASSERT_NE(find_member(*doc, "set"), nullptr);
  EXPECT_EQ(find_member(*doc, "set")->GetInt(), 1);
  ASSERT_NE(find_member(*doc, "unset"), nullptr);
  EXPECT_EQ(find_non_null(*doc, "unset"), nullptr);
  EXPECT_EQ(find_member(*doc, "missing"), nullptr);
  EXPECT_EQ(find_non_null(*doc, "missing"), nullptr);
  // Not an object: no member, rather than RapidJSON's assertion.
  EXPECT_EQ(find_non_null((*doc)["set"], "x"), nullptr);
}

TEST(Json, WriterOutputParsesBackToTheSameValues) {
  Writer w(false);
  w.begin_object()
      .field("schema_version", kSchemaVersion)
      .field("name", "rxe0")
      .field("rate", 12.5)
      .field("up", true)
      .field("ipv4", std::optional<std::string>())
      .field("quote", std::string("a\"b\n"));
  w.key("list").begin_array().value(uint64_t{18446744073709551615ull}).value(-3).end_array();
  w.end_object();
  std::string text = w.str();
  ASSERT_EQ(text.back(), '\n');
  auto doc = parse(text, "written");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_STREQ((*doc)["name"].GetString(), "rxe0");
  EXPECT_DOUBLE_EQ((*doc)["rate"].GetDouble(), 12.5);
  EXPECT_TRUE((*doc)["up"].GetBool());
  EXPECT_TRUE((*doc)["ipv4"].IsNull());
  EXPECT_STREQ((*doc)["quote"].GetString(), "a\"b\n");
  EXPECT_EQ((*doc)["list"][0].GetUint64(), 18446744073709551615ull);
  EXPECT_EQ((*doc)["list"][1].GetInt(), -3);
}

TEST(Json, PositionOfCountsLinesAndColumnsFromOne) {
  TextPosition p = position_of("ab\ncd", 4);
  EXPECT_EQ(p.line, 2u);
  EXPECT_EQ(p.column, 2u);
}

} // namespace
} // namespace fabric::json
