// Chat-template detection and rendering (see chat_template.h). The markers and the formats follow llama.cpp's
// llama-chat.cpp, checked against it by tests/core/chat_template_test.cpp's goldens (tools/parity: `oracle chat`).
#include "core/data/chat_template.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace speculum::data {

// ---- format names ----

namespace {

struct FormatName {
    ChatFormat format;
    const char* name;
};
constexpr FormatName k_names[] = {
    {ChatFormat::chatml, "chatml"},
    {ChatFormat::llama2, "llama2"},
    {ChatFormat::llama2_sys, "llama2-sys"},
    {ChatFormat::llama2_sys_bos, "llama2-sys-bos"},
    {ChatFormat::llama2_sys_strip, "llama2-sys-strip"},
    {ChatFormat::mistral_v1, "mistral-v1"},
    {ChatFormat::mistral_v3, "mistral-v3"},
    {ChatFormat::mistral_v3_tekken, "mistral-v3-tekken"},
    {ChatFormat::mistral_v7, "mistral-v7"},
    {ChatFormat::mistral_v7_tekken, "mistral-v7-tekken"},
    {ChatFormat::phi3, "phi3"},
    {ChatFormat::phi4, "phi4"},
    {ChatFormat::falcon3, "falcon3"},
    {ChatFormat::zephyr, "zephyr"},
    {ChatFormat::monarch, "monarch"},
    {ChatFormat::gemma, "gemma"},
    {ChatFormat::openchat, "openchat"},
    {ChatFormat::vicuna, "vicuna"},
    {ChatFormat::vicuna_orca, "vicuna-orca"},
    {ChatFormat::deepseek, "deepseek"},
    {ChatFormat::deepseek2, "deepseek2"},
    {ChatFormat::deepseek3, "deepseek3"},
    {ChatFormat::command_r, "command-r"},
    {ChatFormat::llama3, "llama3"},
    {ChatFormat::exaone3, "exaone3"},
    {ChatFormat::granite, "granite"},
    {ChatFormat::llama4, "llama4"},
    {ChatFormat::gpt_oss, "gpt-oss"},
};

// Leading and trailing ASCII whitespace removed (llama.cpp's trim).
std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

}  // namespace

const char* chat_format_name(ChatFormat f) {
    for (const FormatName& n : k_names)
        if (n.format == f) return n.name;
    return "unknown";
}

std::string chat_format_names() {
    std::string out;
    for (const FormatName& n : k_names) out += std::string(out.empty() ? "" : ", ") + n.name;
    return out;
}

// ---- detection ----

std::optional<ChatFormat> detect_chat_format(const std::string& t, std::string* why) {
    for (const FormatName& n : k_names)
        if (t == n.name) return n.format;
    auto has     = [&t](const char* s) { return t.find(s) != std::string::npos; };
    auto unknown = [why](const std::string& what) -> std::optional<ChatFormat> {
        if (why) *why = what;
        return std::nullopt;
    };
    // The order is llama.cpp's: earlier markers win.
    if (has("<|im_start|>")) {
        if (has("<|im_sep|>")) return ChatFormat::phi4;
        if (has("<end_of_utterance>")) return unknown("a SmolVLM template (not supported)");
        return ChatFormat::chatml;
    }
    if (t.rfind("mistral", 0) == 0 || has("[INST]")) {
        if (has("[SYSTEM_PROMPT]")) return ChatFormat::mistral_v7;
        if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
            if (has(" [INST]")) return ChatFormat::mistral_v1;
            if (has("\"[INST]\"")) return ChatFormat::mistral_v3_tekken;
            return ChatFormat::mistral_v3;
        }
        if (has("content.strip()")) return ChatFormat::llama2_sys_strip;
        if (has("bos_token + '[INST]")) return ChatFormat::llama2_sys_bos;
        if (has("<<SYS>>")) return ChatFormat::llama2_sys;
        return ChatFormat::llama2;
    }
    if (has("<|assistant|>") && has("<|end|>")) return ChatFormat::phi3;
    if (has("[gMASK]<sop>")) return unknown("a ChatGLM 4 template (not supported)");
    if (has("<|assistant|>") && has("<|user|>")) {
        if (has("<|tool_declare|>")) return unknown("an EXAONE MoE template (not supported)");
        if (has("</s>")) return ChatFormat::falcon3;
        return unknown("a GLM-Edge template (not supported)");
    }
    if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>"))
        return unknown("a GLM-Edge template (not supported)");
    if (has("<|user|>") && has("<|endoftext|>")) return ChatFormat::zephyr;
    if (has("bos_token + message['role']")) return ChatFormat::monarch;
    if (has("<start_of_turn>")) return ChatFormat::gemma;
    if (has("'\\n\\nAssistant: ' + eos_token")) return unknown("an Orion template (not supported)");
    if (has("GPT4 Correct ")) return ChatFormat::openchat;
    if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? ChatFormat::vicuna_orca : ChatFormat::vicuna;
    if (has("### Instruction:") && has("<|EOT|>")) return ChatFormat::deepseek;
    if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return ChatFormat::command_r;
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) return ChatFormat::llama3;
    if (has("[gMASK]sop")) return unknown("a ChatGLM 3 template (not supported)");
    if (has("<用户>")) return unknown("a MiniCPM template (not supported)");
    if (has("'Assistant: ' + message['content'] + eos_token")) return ChatFormat::deepseek2;
    if (has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>")) return ChatFormat::deepseek3;
    if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) {
        if (has("[|tool|]")) return unknown("an EXAONE 4 template (not supported)");
        return ChatFormat::exaone3;
    }
    if (has("<|start_of_role|>")) {
        if (has("<tool_call>") || has("<tools>")) return unknown("a Granite 4 template (not supported)");
        return ChatFormat::granite;
    }
    if (has("<|header_start|>") && has("<|header_end|>")) return ChatFormat::llama4;
    if (has("<|start|>") && has("<|channel|>")) return ChatFormat::gpt_oss;
    return unknown("no known family's markers");
}

// ---- rendering ----

std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_assistant) {
    std::ostringstream ss;
    switch (f) {
        case ChatFormat::chatml:
            for (const ChatMessage& m : messages) ss << "<|im_start|>" << m.role << "\n" << m.content << "<|im_end|>\n";
            if (add_assistant) ss << "<|im_start|>assistant\n";
            break;
        case ChatFormat::mistral_v7:
        case ChatFormat::mistral_v7_tekken: {
            const char* sp = f == ChatFormat::mistral_v7 ? " " : "";
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << "[SYSTEM_PROMPT]" << sp << m.content << "[/SYSTEM_PROMPT]";
                else if (m.role == "user")
                    ss << "[INST]" << sp << m.content << "[/INST]";
                else
                    ss << sp << m.content << "</s>";
            }
            break;
        }
        case ChatFormat::mistral_v1:
        case ChatFormat::mistral_v3:
        case ChatFormat::mistral_v3_tekken: {
            const std::string lead  = f == ChatFormat::mistral_v1 ? " " : "";
            const std::string trail = f == ChatFormat::mistral_v3_tekken ? "" : " ";
            bool in_turn            = false;
            for (const ChatMessage& m : messages) {
                if (!in_turn) ss << lead << "[INST]" << trail, in_turn = true;
                if (m.role == "system") {
                    ss << m.content << "\n\n";
                } else if (m.role == "user") {
                    ss << m.content << lead << "[/INST]";
                } else {
                    ss << trail << (f == ChatFormat::mistral_v3 ? trim(m.content) : m.content) << "</s>";
                    in_turn = false;
                }
            }
            break;
        }
        case ChatFormat::llama2:
        case ChatFormat::llama2_sys:
        case ChatFormat::llama2_sys_bos:
        case ChatFormat::llama2_sys_strip: {
            bool in_turn = true;  // the opening [INST] is written here; BOS is the tokenizer's
            ss << "[INST] ";
            for (const ChatMessage& m : messages) {
                const std::string content = f == ChatFormat::llama2_sys_strip ? trim(m.content) : m.content;
                if (!in_turn) {
                    in_turn = true;
                    ss << (f == ChatFormat::llama2_sys_bos ? "<s>[INST] " : "[INST] ");
                }
                if (m.role == "system") {
                    if (f != ChatFormat::llama2)
                        ss << "<<SYS>>\n" << content << "\n<</SYS>>\n\n";
                    else
                        ss << content << "\n";
                } else if (m.role == "user") {
                    ss << content << " [/INST]";
                } else {
                    ss << content << "</s>";
                    in_turn = false;
                }
            }
            break;
        }
        case ChatFormat::phi3:
            for (const ChatMessage& m : messages) ss << "<|" << m.role << "|>\n" << m.content << "<|end|>\n";
            if (add_assistant) ss << "<|assistant|>\n";
            break;
        case ChatFormat::phi4:
            for (const ChatMessage& m : messages)
                ss << "<|im_start|>" << m.role << "<|im_sep|>" << m.content << "<|im_end|>";
            if (add_assistant) ss << "<|im_start|>assistant<|im_sep|>";
            break;
        case ChatFormat::falcon3:
            for (const ChatMessage& m : messages) ss << "<|" << m.role << "|>\n" << m.content << "\n";
            if (add_assistant) ss << "<|assistant|>\n";
            break;
        case ChatFormat::zephyr:
            for (const ChatMessage& m : messages) ss << "<|" << m.role << "|>\n" << m.content << "<|endoftext|>\n";
            if (add_assistant) ss << "<|assistant|>\n";
            break;
        case ChatFormat::monarch:
            for (size_t i = 0; i < messages.size(); ++i)
                ss << (i == 0 ? "" : "<s>") << messages[i].role << "\n" << messages[i].content << "</s>\n";
            if (add_assistant) ss << "<s>assistant\n";
            break;
        case ChatFormat::gemma: {
            std::string system;  // Gemma has no system turn: it goes into the next user turn
            for (const ChatMessage& m : messages) {
                if (m.role == "system") {
                    system += trim(m.content);
                    continue;
                }
                const std::string role = m.role == "assistant" ? "model" : m.role;
                ss << "<start_of_turn>" << role << "\n";
                if (!system.empty() && role != "model") ss << system << "\n\n", system.clear();
                ss << trim(m.content) << "<end_of_turn>\n";
            }
            if (add_assistant) ss << "<start_of_turn>model\n";
            break;
        }
        case ChatFormat::openchat:
            for (const ChatMessage& m : messages) {
                if (m.role == "system") {
                    ss << m.content << "<|end_of_turn|>";
                } else {
                    std::string role = m.role;
                    if (!role.empty()) role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
                    ss << "GPT4 Correct " << role << ": " << m.content << "<|end_of_turn|>";
                }
            }
            if (add_assistant) ss << "GPT4 Correct Assistant:";
            break;
        case ChatFormat::vicuna:
        case ChatFormat::vicuna_orca:
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << (f == ChatFormat::vicuna_orca ? "SYSTEM: " + m.content + "\n" : m.content + "\n\n");
                else if (m.role == "user")
                    ss << "USER: " << m.content << "\n";
                else if (m.role == "assistant")
                    ss << "ASSISTANT: " << m.content << "</s>\n";
            }
            if (add_assistant) ss << "ASSISTANT:";
            break;
        case ChatFormat::deepseek:
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << m.content;
                else if (m.role == "user")
                    ss << "### Instruction:\n" << m.content << "\n";
                else if (m.role == "assistant")
                    ss << "### Response:\n" << m.content << "\n<|EOT|>\n";
            }
            if (add_assistant) ss << "### Response:\n";
            break;
        case ChatFormat::deepseek2:
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << m.content << "\n\n";
                else if (m.role == "user")
                    ss << "User: " << m.content << "\n\n";
                else if (m.role == "assistant")
                    ss << "Assistant: " << m.content << "<｜end▁of▁sentence｜>";
            }
            if (add_assistant) ss << "Assistant:";
            break;
        case ChatFormat::deepseek3:
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << m.content << "\n\n";
                else if (m.role == "user")
                    ss << "<｜User｜>" << m.content;
                else if (m.role == "assistant")
                    ss << "<｜Assistant｜>" << m.content << "<｜end▁of▁sentence｜>";
            }
            if (add_assistant) ss << "<｜Assistant｜>";
            break;
        case ChatFormat::command_r:
            for (const ChatMessage& m : messages) {
                const char* tag = m.role == "system"      ? "<|SYSTEM_TOKEN|>"
                                  : m.role == "user"      ? "<|USER_TOKEN|>"
                                  : m.role == "assistant" ? "<|CHATBOT_TOKEN|>"
                                                          : nullptr;
                if (tag) ss << "<|START_OF_TURN_TOKEN|>" << tag << trim(m.content) << "<|END_OF_TURN_TOKEN|>";
            }
            if (add_assistant) ss << "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>";
            break;
        case ChatFormat::llama3:
            for (const ChatMessage& m : messages)
                ss << "<|start_header_id|>" << m.role << "<|end_header_id|>\n\n" << trim(m.content) << "<|eot_id|>";
            if (add_assistant) ss << "<|start_header_id|>assistant<|end_header_id|>\n\n";
            break;
        case ChatFormat::exaone3:
            for (const ChatMessage& m : messages) {
                if (m.role == "system")
                    ss << "[|system|]" << trim(m.content) << "[|endofturn|]\n";
                else if (m.role == "user")
                    ss << "[|user|]" << trim(m.content) << "\n";
                else if (m.role == "assistant")
                    ss << "[|assistant|]" << trim(m.content) << "[|endofturn|]\n";
            }
            if (add_assistant) ss << "[|assistant|]";
            break;
        case ChatFormat::granite:
            for (const ChatMessage& m : messages) {
                ss << "<|start_of_role|>" << m.role << "<|end_of_role|>";
                if (m.role == "assistant_tool_call") ss << "<|tool_call|>";
                ss << m.content << "<|end_of_text|>\n";
            }
            if (add_assistant) ss << "<|start_of_role|>assistant<|end_of_role|>";
            break;
        case ChatFormat::llama4:
            for (const ChatMessage& m : messages)
                ss << "<|header_start|>" << m.role << "<|header_end|>\n\n" << trim(m.content) << "<|eot|>";
            if (add_assistant) ss << "<|header_start|>assistant<|header_end|>\n\n";
            break;
        case ChatFormat::gpt_oss:  // Harmony, as llama.cpp renders it without tools or channels
            for (const ChatMessage& m : messages)
                ss << "<|start|>" << m.role << "<|message|>" << m.content
                   << (m.role == "assistant" ? "<|return|>" : "<|end|>");
            if (add_assistant) ss << "<|start|>assistant";
            break;
    }
    return ss.str();
}

// ---- applying a model's template ----

std::string apply_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                const std::string& where, bool add_assistant) {
    if (tmpl.empty())
        throw std::invalid_argument(where +
                                    ": the row has 'messages', but the model has no tokenizer.chat_template "
                                    "(use 'prompt' instead)");
    std::string why;
    const std::optional<ChatFormat> f = detect_chat_format(tmpl, &why);
    if (!f)
        throw std::invalid_argument(where + ": the model's tokenizer.chat_template is not one Speculum can render (" +
                                    why + "); supported: " + chat_format_names());
    return render_chat(*f, messages, add_assistant);
}

}  // namespace speculum::data
