// Chat templates: the prompt text of a conversation, for the template families llama.cpp recognises from a model's
// tokenizer.chat_template (Jinja text it never runs: it looks for marker strings, in llama.cpp's order, and renders
// the family's fixed format). Dataset rows with a `messages` field are rendered this way (core/session/run.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace speculum::data {

struct ChatMessage {
    std::string role;  // "system", "user", "assistant" (others are passed through where the format allows)
    std::string content;
    bool operator==(const ChatMessage&) const = default;
};

enum class ChatFormat {
    chatml,
    llama2,
    llama2_sys,
    llama2_sys_bos,
    llama2_sys_strip,
    mistral_v1,
    mistral_v3,
    mistral_v3_tekken,
    mistral_v7,
    mistral_v7_tekken,
    phi3,
    phi4,
    falcon3,
    zephyr,
    monarch,
    gemma,
    openchat,
    vicuna,
    vicuna_orca,
    deepseek,
    deepseek2,
    deepseek3,
    command_r,
    llama3,
    exaone3,
    granite,
    llama4,
    gpt_oss,
};

// llama.cpp's name of the format ("chatml", "llama3", "mistral-v7-tekken", ...).
const char* chat_format_name(ChatFormat f);
// The names of every format, comma-separated (for messages).
std::string chat_format_names();

// The format of a template: its exact name (as llama.cpp accepts "chatml" etc. in place of a template), or the
// family whose markers the text contains. nullopt when neither; `why` then says what the text looked like (a family
// llama.cpp knows but Speculum does not render, or nothing known).
std::optional<ChatFormat> detect_chat_format(const std::string& tmpl, std::string* why = nullptr);

// The conversation as the format's text; add_assistant ends it with the assistant's opening so the model answers.
std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_assistant = true);

// detect + render; throws std::invalid_argument naming `where` and listing the supported formats when the template
// is empty or not recognised.
std::string apply_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                const std::string& where, bool add_assistant = true);

}  // namespace speculum::data
