// Depth-limited JSON (issue #27, item 1): nesting deeper than kMaxJsonDepth is refused while parsing, with the input
// named; text after a NUL byte is refused; hostile JSON pointers are refused. These inputs crashed before (a stack
// overflow at 30,000 levels).
#include "core/json_input.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace speculum;

namespace {

std::string nested(size_t depth, const char* open = "[", const char* close = "]") {
    std::string s;
    for (size_t i = 0; i < depth; ++i) s += open;
    for (size_t i = 0; i < depth; ++i) s += close;
    return s;
}

std::string error_of(const std::string& text) {
    try {
        (void)parse_json(text, "spec.json");
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(JsonInput, DepthIsLimitedWhileParsing) {
    EXPECT_EQ(error_of(nested(kMaxJsonDepth)), "") << "the limit itself is fine";
    const std::string deep = "spec.json: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    EXPECT_EQ(error_of(nested(kMaxJsonDepth + 1)), deep);
    EXPECT_EQ(error_of(nested(100000)), deep) << "100,000 levels: refused, no stack overflow";
    std::string objects;
    for (int i = 0; i < 50000; ++i) objects += "{\"a\":";
    objects += "1";
    for (int i = 0; i < 50000; ++i) objects += "}";
    EXPECT_EQ(error_of(objects), deep);
    EXPECT_EQ(error_of("{\"base\": {\"x\": " + nested(30000) + "}}"), deep) << "deep anywhere inside";
    std::istringstream in(nested(2000));
    EXPECT_THROW((void)parse_json(in, "stream"), std::invalid_argument);
}

TEST(JsonInput, MalformedAndNulAreErrorsNamingTheInput) {
    EXPECT_EQ(parse_json(R"({"a": [1, 2, {"b": null}]})", "x")["a"][2]["b"], nullptr);
    EXPECT_EQ(error_of("{\"a\": 1}").size(), 0u);
    EXPECT_EQ(error_of(std::string("{\"a\": 1}\0{\"b\": 2}", 17)), "spec.json: a NUL byte at byte 8 (not JSON text)");
    const std::string bad = error_of("{\"a\": ");
    EXPECT_EQ(bad.rfind("spec.json: not valid JSON: ", 0), 0u) << bad;
}

TEST(JsonInput, HostilePointersAreRefused) {
    EXPECT_NO_THROW(check_json_pointer("/levels/0/prune/ratio", "axis"));
    std::string long_path;
    for (int i = 0; i < 30000; ++i) long_path += "/a";
    EXPECT_THROW(check_json_pointer(long_path, "axis"), std::invalid_argument);
    std::string many;
    for (size_t i = 0; i <= kMaxJsonPointerSegments; ++i) many += "/a";
    EXPECT_THROW(check_json_pointer(many, "axis"), std::invalid_argument);
    EXPECT_THROW(check_json_pointer("no-slash", "axis"), std::invalid_argument);
    EXPECT_THROW(check_json_pointer("/a~2", "axis"), std::invalid_argument);
}
