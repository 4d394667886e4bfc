#include "services/common/logging_json.h"

#include <chrono>
#include <sstream>

#include "gtest/gtest.h"
#include "services/common/logging.h"

namespace flowsched {
namespace {

TEST(JsonEscapeTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("plain text"), "plain text");
  EXPECT_EQ(JsonEscape("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(JsonEscape("C:\\dir"), "C:\\\\dir");
  EXPECT_EQ(JsonEscape("a\nb\rc\td\be\ff"), "a\\nb\\rc\\td\\be\\ff");
  EXPECT_EQ(JsonEscape(std::string("nul\0x\x1f\x7f", 7)),
            "nul\\u0000x\\u001f\\u007f");
}

TEST(JsonEscapeTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
  EXPECT_EQ(JsonEscape("bad \xff byte"), "bad \\ufffd byte");
  EXPECT_EQ(JsonEscape("cut \xe2\x82"), "cut \\ufffd\\ufffd");
  EXPECT_EQ(JsonEscape("overlong \xc0\xaf"), "overlong \\ufffd\\ufffd");
  EXPECT_EQ(JsonEscape("surrogate \xed\xa0\x80"),
            "surrogate \\ufffd\\ufffd\\ufffd");
}

TEST(JsonLogLineTest, OneObjectWithTimeLevelServiceAndMessage) {
  const auto time = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(1'764'198'300'123));
  EXPECT_EQ(FormatJsonLogLine(time, "warning", "graph-manager",
                              "round 7 \"late\"\nretrying"),
            "{\"time\":\"2025-11-26T23:05:00.123Z\",\"level\":\"warning\","
            "\"service\":\"graph-manager\",\"message\":\"round 7 "
            "\\\"late\\\"\\nretrying\"}\n");
  EXPECT_EQ(FormatJsonLogLine(std::chrono::system_clock::time_point(
                                  std::chrono::milliseconds(-1)),
                              "info", "s", ""),
            "{\"time\":\"1969-12-31T23:59:59.999Z\",\"level\":\"info\","
            "\"service\":\"s\",\"message\":\"\"}\n");
}

TEST(JsonLogLineTest, SpdlogFormatterWritesTheSameLine) {
  auto formatter = MakeJsonLogFormatter();
  const auto time = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(1'764'198'300'123));
  spdlog::details::log_msg msg(time, spdlog::source_loc{}, "solver-worker",
                               spdlog::level::err, "tab\there");
  spdlog::memory_buf_t out;
  formatter->clone()->format(msg, out);
  EXPECT_EQ(std::string(out.data(), out.size()),
            FormatJsonLogLine(time, "error", "solver-worker", "tab\there"));
}

}  // namespace
}  // namespace flowsched
