// Prompt suites as JSONL: one JSON object per line with at least {"id", "task", "prompt", "max_new_tokens"}, or
// "messages" ([{"role", "content"}, ...], rendered with the model's chat template: chat_template.h) for "prompt".
// The loader reports every malformed line with its number and the reason; it never skips a line silently.
#pragma once

#include "core/data/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::data {

struct DatasetError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Prompt {
    std::string id;                     // unique within the file
    std::string task;                   // e.g. "code_completion"
    std::string prompt;                 // the text given to the model; empty when the row gives `messages`
    std::vector<ChatMessage> messages;  // a conversation, rendered by the model's chat template; or empty
    int32_t max_new_tokens = 64;        // tokens to generate, in [1, kMaxNewTokens]
    nlohmann::json extra;               // any other fields of the line, kept as they were (object, possibly empty)
    int64_t line = 0;                   // 1-based line number in the file

    bool operator==(const Prompt&) const = default;
};

struct LineIssue {
    int64_t line = 0;    // 1-based
    std::string reason;  // "missing field 'prompt'", "not valid JSON: ...", "duplicate id 'p7' (first on line 3)"
};

struct Dataset {
    std::string path;
    std::vector<Prompt> prompts;    // the well-formed lines, in file order
    std::vector<LineIssue> issues;  // every malformed line (empty when the file is clean)

    std::vector<std::string> tasks() const;  // distinct tasks, in first-seen order
    std::vector<const Prompt*> by_task(const std::string& task) const;
};

constexpr int32_t kMaxNewTokens  = 4096;
constexpr uint64_t kMaxLineBytes = 1u << 20;    // 1 MiB per line
constexpr uint64_t kMaxFileBytes = 256u << 20;  // 256 MiB per file

// The text a prompt gives the model: `prompt`, or `messages` rendered with `chat_template` (the model's
// tokenizer.chat_template). Throws std::invalid_argument naming the row when the template cannot render it.
std::string prompt_text(const Prompt& p, const std::string& chat_template, const std::string& file);

// Parses JSONL text; `name` is used in messages. Blank lines are allowed and ignored (they are not data).
Dataset parse_dataset(const std::string& text, const std::string& name);

// Reads and parses a file. Throws DatasetError when the file cannot be read or is too large.
// Malformed lines are returned in Dataset::issues.
Dataset load_dataset_lenient(const std::string& path);

// As above, but throws DatasetError when any line is malformed; the message lists the first issues
// ("FILE:LINE: reason") and how many there are in all.
Dataset load_dataset(const std::string& path);

// One-line summary of the issues, e.g. "prompts.jsonl: 3 malformed lines (first: line 7: missing field 'id')".
std::string describe_issues(const Dataset& d, size_t max_listed = 10);

}  // namespace speculum::data
