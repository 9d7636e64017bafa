// Strict argument parser for speculum-cli subcommands (see cli.h).
#include "cli.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace speculum::cli {

Args::Args(std::string command, std::vector<OptionSpec> specs, std::vector<std::string> positional_names)
    : m_command(std::move(command)), m_specs(std::move(specs)), m_positional_names(std::move(positional_names)) {
    m_specs.push_back({"help", 'h', false, "", "show this help and exit"});
}

const OptionSpec* Args::find_long(const std::string& name) const {
    for (const auto& s : m_specs)
        if (s.long_name == name) return &s;
    return nullptr;
}

const OptionSpec* Args::find_short(char c) const {
    for (const auto& s : m_specs)
        if (s.short_name != 0 && s.short_name == c) return &s;
    return nullptr;
}

namespace {

// A number as people write it in decimal: digits, a point, a sign and an exponent. strtod alone would also take
// "0x10" (16: `--min-time 0x10` waited 16 s), "inf" and "nan".
bool decimal_text(const std::string& v) {
    for (char c : v)
        if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
            return false;
    return true;
}

// A numeric option's value is checked as it is parsed, whatever mode the command then takes: "--level abc" was
// accepted (exit 0) where the format did not use it, and "--bench 1e21" built a draft before it was read. The kind
// comes from the value's name in help: N, MS, MB, K, D, F, H, V are integers; A, W, S, P, T numbers. Ranges are
// checked where the value is used (int_or, float_or), as they may depend on other options.
void check_value_kind(const OptionSpec& spec, const std::string& value) {
    static const char* const integers[] = {"N", "MS", "MB", "K", "D", "F", "H", "V"};
    static const char* const numbers[]  = {"A", "W", "S", "P", "T"};
    const auto is                       = [&](const auto& names) {
        for (const char* n : names)
            if (spec.value_name == n) return true;
        return false;
    };
    errno     = 0;
    char* end = nullptr;
    if (is(integers)) {
        (void)std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE)
            throw UsageError("option '--" + spec.long_name + "' expects an integer, got '" + value + "'");
    } else if (is(numbers)) {
        const double x = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || !decimal_text(value))
            throw UsageError("option '--" + spec.long_name + "' expects a number, got '" + value + "'");
    }
}

}  // namespace

bool Args::parse(int argc, char** argv) {
    bool only_positional  = false;
    size_t max_positional = m_positional_names.size();
    // A last positional written NAME... or [NAME...] (optional) takes any number of arguments.
    bool variadic = !m_positional_names.empty() &&
                    (m_positional_names.back().ends_with("...") || m_positional_names.back().ends_with("...]"));
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (only_positional || arg == "-" || arg.empty() || arg[0] != '-') {
            if (!variadic && m_positional.size() >= max_positional)
                throw UsageError("unexpected argument '" + arg + "'");
            m_positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            only_positional = true;
            continue;
        }
        const OptionSpec* spec = nullptr;
        std::optional<std::string> inline_value;
        if (arg.starts_with("--")) {
            std::string name = arg.substr(2);
            if (auto eq = name.find('='); eq != std::string::npos) {
                inline_value = name.substr(eq + 1);
                name         = name.substr(0, eq);
            }
            spec = find_long(name);
            if (!spec) throw UsageError("unknown option '--" + name + "'");
        } else {
            if (arg.size() != 2) throw UsageError("unknown option '" + arg + "' (short options take one letter)");
            spec = find_short(arg[1]);
            if (!spec) throw UsageError("unknown option '" + arg + "'");
        }
        if (spec->long_name == "help") return false;
        if (!spec->takes_value) {
            if (inline_value) throw UsageError("option '--" + spec->long_name + "' takes no value");
            m_values[spec->long_name].push_back("");
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= argc)
                throw UsageError("option '--" + spec->long_name + "' needs a value (" + spec->value_name + ")");
            inline_value = argv[++i];
        }
        check_value_kind(*spec, *inline_value);
        m_values[spec->long_name].push_back(*inline_value);
    }
    return true;
}

bool Args::has(const std::string& long_name) const {
    return m_values.count(long_name) != 0;
}

std::optional<std::string> Args::value(const std::string& long_name) const {
    auto it = m_values.find(long_name);
    if (it == m_values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::values(const std::string& long_name) const {
    auto it = m_values.find(long_name);
    return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::value_or(const std::string& long_name, const std::string& fallback) const {
    auto v = value(long_name);
    return v ? *v : fallback;
}

long long Args::int_or(const std::string& long_name, long long fallback, long long lo, long long hi) const {
    auto v = value(long_name);
    if (!v) return fallback;
    errno       = 0;
    char* end   = nullptr;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno == ERANGE)
        throw UsageError("option '--" + long_name + "' expects an integer, got '" + *v + "'");
    if (x < lo || x > hi)
        throw UsageError("option '--" + long_name + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "], got " + *v);
    return x;
}

double Args::float_or(const std::string& long_name, double fallback, double lo, double hi) const {
    auto v = value(long_name);
    if (!v) return fallback;
    errno     = 0;
    char* end = nullptr;
    double x  = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || errno == ERANGE || x != x || !decimal_text(*v))
        throw UsageError("option '--" + long_name + "' expects a number, got '" + *v + "'");
    if (x < lo || x > hi) {
        std::ostringstream msg;
        msg << "option '--" << long_name << "' must be in [" << lo << ", " << hi << "], got " << *v;
        throw UsageError(msg.str());
    }
    return x;
}

std::string Args::help(const std::string& summary) const {
    std::ostringstream out;
    out << "usage: speculum-cli " << m_command;
    if (m_specs.size() > 1) out << " [options]";
    for (const auto& p : m_positional_names) out << ' ' << p;
    out << "\n\n" << summary << "\n\noptions:\n";
    for (const auto& s : m_specs) {
        std::string left = "  ";
        left += s.short_name ? std::string("-") + s.short_name + ", " : "    ";
        left += "--" + s.long_name;
        if (s.takes_value) left += " " + s.value_name;
        if (left.size() < 28)
            left.resize(28, ' ');
        else
            left += "  ";
        out << left << s.help << '\n';
    }
    return out.str();
}

}  // namespace speculum::cli
