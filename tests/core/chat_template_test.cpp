// Chat templates (issue #23): detection and rendering equal llama.cpp's llama_chat_apply_template on every format
// name and on marker texts of each family (tests/core/golden/chat, tools/parity/chat_goldens.py); dataset rows with
// `messages` parse, render with the model's template, and fail clearly without one.
#include "core/data/chat_template.h"
#include "core/data/dataset.h"
#include "support/test_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace speculum;
using namespace speculum::data;
using testing::HasSubstr;

TEST(ChatTemplate, EveryFormatRendersAsLlamaCpp) {
    std::ifstream in(test::source_dir() / "tests/core/golden/chat/llama_cpp.json");
    ASSERT_TRUE(in) << "golden missing";
    const nlohmann::json g = nlohmann::json::parse(in);
    ASSERT_GE(g["cases"].size(), 200u);
    size_t same = 0;
    for (const auto& c : g["cases"]) {
        const std::string tmpl = c["template"];
        SCOPED_TRACE(tmpl);
        std::vector<ChatMessage> msgs;
        for (const auto& m : c["messages"]) msgs.push_back({m["role"], m["content"]});
        const std::optional<ChatFormat> f = detect_chat_format(tmpl);
        ASSERT_TRUE(f.has_value());
        EXPECT_EQ(chat_format_name(*f), c["expect_format"].get<std::string>());
        const std::string got = render_chat(*f, msgs, c["add_assistant"]);
        EXPECT_EQ(got, c["text"].get<std::string>());
        same += got == c["text"].get<std::string>();
    }
    RecordProperty("identical", std::to_string(same) + "/" + std::to_string(g["cases"].size()));
}

TEST(ChatTemplate, UnknownOrUnsupportedTemplatesAreNamed) {
    std::string why;
    EXPECT_FALSE(detect_chat_format("{{ messages }}", &why));
    EXPECT_EQ(why, "no known family's markers");
    EXPECT_FALSE(detect_chat_format("[gMASK]<sop>{{ m }}", &why));
    EXPECT_THAT(why, HasSubstr("ChatGLM 4"));
    try {
        apply_chat_template("{{ messages }}", {{"user", "hi"}}, "p.jsonl:3");
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("p.jsonl:3: the model's tokenizer.chat_template is not one Speculum can render"));
        EXPECT_THAT(e.what(), HasSubstr("supported: chatml, llama2"));
    }
    EXPECT_THROW(apply_chat_template("", {{"user", "hi"}}, "p.jsonl:3"), std::invalid_argument);
}

TEST(ChatTemplate, DatasetRowsWithMessages) {
    const Dataset d = parse_dataset(
        R"({"id":"a","task":"chat","max_new_tokens":8,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]})"
        "\n"
        R"({"id":"b","task":"chat","max_new_tokens":8,"prompt":"x","messages":[{"role":"user","content":"Hi"}]})"
        "\n"
        R"({"id":"c","task":"chat","max_new_tokens":8,"messages":[]})"
        "\n"
        R"({"id":"d","task":"chat","max_new_tokens":8,"messages":[{"role":"user"}]})"
        "\n"
        R"({"id":"e","task":"chat","max_new_tokens":8})",
        "chat.jsonl");
    ASSERT_EQ(d.prompts.size(), 1u);
    EXPECT_EQ(d.prompts[0].messages.size(), 2u);
    EXPECT_TRUE(d.prompts[0].prompt.empty());
    EXPECT_FALSE(d.prompts[0].extra.contains("messages"));
    ASSERT_EQ(d.issues.size(), 4u);
    EXPECT_EQ(d.issues[0].reason, "fields 'prompt' and 'messages' exclude each other");
    EXPECT_EQ(d.issues[1].reason, "field 'messages' must be a non-empty array");
    EXPECT_EQ(d.issues[2].reason, "messages[0].content must be a string");
    EXPECT_EQ(d.issues[3].reason, "missing field 'prompt'");
    EXPECT_EQ(prompt_text(d.prompts[0], "<|im_start|>", "chat.jsonl"),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_THAT(
        [&] {
            try {
                prompt_text(d.prompts[0], "", "chat.jsonl");
            } catch (const std::invalid_argument& e) {
                return std::string(e.what());
            }
            return std::string();
        }(),
        HasSubstr("chat.jsonl:1: the row has 'messages', but the model has no tokenizer.chat_template"));
}
