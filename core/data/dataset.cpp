// JSONL prompt-suite loader (see dataset.h). Strict about types, lenient about extra fields (kept in `extra`).
#include "core/data/dataset.h"

#include "core/file_io.h"
#include "core/json_input.h"

#include <map>
#include <sstream>

namespace speculum::data {

std::vector<std::string> Dataset::tasks() const {
    std::vector<std::string> out;
    for (const auto& p : prompts) {
        bool seen = false;
        for (const auto& t : out) seen = seen || t == p.task;
        if (!seen) out.push_back(p.task);
    }
    return out;
}

std::vector<const Prompt*> Dataset::by_task(const std::string& task) const {
    std::vector<const Prompt*> out;
    for (const auto& p : prompts)
        if (p.task == task) out.push_back(&p);
    return out;
}

static std::string json_type_name(const nlohmann::json& j) {
    return j.type_name();
}

// Returns an empty string when the line is a valid prompt (and fills `out`), else the reason.
static std::string parse_line(const std::string& line, int64_t line_no, Prompt& out) {
    if (line.size() > kMaxLineBytes) return "line longer than " + std::to_string(kMaxLineBytes) + " bytes";
    nlohmann::json j;
    try {
        j = parse_json(line, "line");
    } catch (const std::invalid_argument& e) {
        std::string what = e.what();
        auto at          = what.find("parse error");
        return at == std::string::npos ? what.substr(std::string("line: ").size())
                                       : "not valid JSON (" + what.substr(at) + ")";
    }
    if (!j.is_object()) return "expected a JSON object, got " + json_type_name(j);
    const bool chat = j.contains("messages");
    if (chat && j.contains("prompt")) return "fields 'prompt' and 'messages' exclude each other";
    if (chat) {
        const nlohmann::json& ms = j["messages"];
        if (!ms.is_array() || ms.empty()) return "field 'messages' must be a non-empty array";
        for (size_t i = 0; i < ms.size(); ++i) {
            const std::string at = "messages[" + std::to_string(i) + "]";
            if (!ms[i].is_object()) return at + " must be an object with 'role' and 'content'";
            for (const char* key : {"role", "content"})
                if (!ms[i].contains(key) || !ms[i][key].is_string()) return at + "." + key + " must be a string";
            if (ms[i]["role"].get<std::string>().empty()) return at + ".role is empty";
            out.messages.push_back({ms[i]["role"].get<std::string>(), ms[i]["content"].get<std::string>()});
        }
    }
    for (const char* key : {"id", "task", "prompt"}) {
        if (chat && std::string(key) == "prompt") continue;
        if (!j.contains(key)) return std::string("missing field '") + key + "'";
        if (!j[key].is_string())
            return std::string("field '") + key + "' must be a string, got " + json_type_name(j[key]);
    }
    if (!j.contains("max_new_tokens")) return "missing field 'max_new_tokens'";
    const auto& m = j["max_new_tokens"];
    if (!m.is_number_integer()) return "field 'max_new_tokens' must be an integer, got " + json_type_name(m);
    int64_t n =
        m.is_number_unsigned() ? int64_t(std::min<uint64_t>(m.get<uint64_t>(), uint64_t(INT64_MAX))) : m.get<int64_t>();
    if (n < 1 || n > kMaxNewTokens)
        return "field 'max_new_tokens' must be in [1, " + std::to_string(kMaxNewTokens) + "], got " + std::to_string(n);
    out.id             = j["id"].get<std::string>();
    out.task           = j["task"].get<std::string>();
    out.prompt         = chat ? std::string() : j["prompt"].get<std::string>();
    out.max_new_tokens = int32_t(n);
    out.line           = line_no;
    if (out.id.empty()) return "field 'id' is empty";
    if (out.task.empty()) return "field 'task' is empty";
    if (!chat && out.prompt.empty()) return "field 'prompt' is empty";
    j.erase("id");
    j.erase("task");
    j.erase("prompt");
    j.erase("messages");
    j.erase("max_new_tokens");
    out.extra = std::move(j);
    return "";
}

std::string prompt_text(const Prompt& p, const std::string& chat_template, const std::string& file) {
    if (p.messages.empty()) return p.prompt;
    return apply_chat_template(chat_template, p.messages, file + ":" + std::to_string(p.line));
}

Dataset parse_dataset(const std::string& text, const std::string& name) {
    Dataset d;
    d.path = name;
    std::map<std::string, int64_t> first_line_of_id;
    size_t start    = 0;
    int64_t line_no = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        ++line_no;
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        start      = end + 1;
        bool blank = line.find_first_not_of(" \t") == std::string::npos;
        if (blank) {
            if (end == text.size()) break;
            continue;
        }
        Prompt p;
        std::string reason = parse_line(line, line_no, p);
        if (reason.empty()) {
            auto [it, inserted] = first_line_of_id.emplace(p.id, line_no);
            if (!inserted) reason = "duplicate id '" + p.id + "' (first on line " + std::to_string(it->second) + ")";
        }
        if (reason.empty())
            d.prompts.push_back(std::move(p));
        else
            d.issues.push_back({line_no, reason});
        if (end == text.size()) break;
    }
    return d;
}

Dataset load_dataset_lenient(const std::string& path) {
    // Read as every input file is (core/file_io.h): a directory or a special file (/dev/zero, a FIFO) is refused
    // by name before anything is read, and a file over the limit by its size.
    try {
        return parse_dataset(read_input_file(path, kMaxFileBytes, "dataset file"), path);
    } catch (const DatasetError&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw DatasetError(e.what());
    }
}

std::string describe_issues(const Dataset& d, size_t max_listed) {
    if (d.issues.empty()) return d.path + ": no malformed lines";
    std::ostringstream out;
    out << d.path << ": " << d.issues.size() << " malformed line" << (d.issues.size() == 1 ? "" : "s");
    for (size_t i = 0; i < d.issues.size() && i < max_listed; ++i)
        out << "\n  " << d.path << ':' << d.issues[i].line << ": " << d.issues[i].reason;
    if (d.issues.size() > max_listed) out << "\n  ... and " << d.issues.size() - max_listed << " more";
    return out.str();
}

Dataset load_dataset(const std::string& path) {
    Dataset d = load_dataset_lenient(path);
    if (!d.issues.empty()) throw DatasetError(describe_issues(d));
    if (d.prompts.empty()) throw DatasetError(path + ": no prompts (the file is empty)");
    return d;
}

}  // namespace speculum::data
