// speculum-cli plumbing shared by every subcommand: the command table entry and a strict argument parser.
// Not a general-purpose parser: options are declared up front so unknown or malformed ones get a clear error.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::cli {

// A usage error: printed as "speculum-cli CMD: <message>" followed by a pointer to --help; exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct OptionSpec {
    std::string long_name;    // "model" for --model
    char short_name  = 0;     // 'm' for -m, 0 for none
    bool takes_value = true;  // false for flags such as --special
    std::string value_name;   // shown in help: "FILE"
    std::string help;         // one line
};

// Parsed arguments of one subcommand. Options may repeat; value() returns the last one.
class Args {
public:
    Args(std::string command, std::vector<OptionSpec> specs, std::vector<std::string> positional_names);

    // Throws UsageError on an unknown option, a missing value or an unexpected positional argument.
    // Returns false when --help was asked for (the caller prints help() and exits 0).
    bool parse(int argc, char** argv);

    bool has(const std::string& long_name) const;
    std::optional<std::string> value(const std::string& long_name) const;
    std::string value_or(const std::string& long_name, const std::string& fallback) const;
    // Every value of a repeatable option, in order (empty when absent).
    std::vector<std::string> values(const std::string& long_name) const;
    // Integer and float values with range checks; a malformed number is a UsageError naming the option.
    long long int_or(const std::string& long_name, long long fallback, long long lo, long long hi) const;
    double float_or(const std::string& long_name, double fallback, double lo, double hi) const;
    const std::vector<std::string>& positional() const { return m_positional; }

    // Help text: usage line, positional names and one line per option.
    std::string help(const std::string& summary) const;

private:
    const OptionSpec* find_long(const std::string& name) const;
    const OptionSpec* find_short(char c) const;

    std::string m_command;
    std::vector<OptionSpec> m_specs;
    std::vector<std::string> m_positional_names;  // "MODEL.gguf", "[SPEC.json]"; the last may end in "..."
    std::map<std::string, std::vector<std::string>> m_values;
    std::vector<std::string> m_positional;
};

struct Command {
    const char* name;
    const char* summary;                // one line for `speculum-cli --help`
    int (*run)(int argc, char** argv);  // argv[0] is the command name
};

// The table of subcommands, in the order `--help` lists them (defined in main.cpp).
const std::vector<Command>& commands();

// Subcommand entry points (one file each: cmd_<name>.cpp).
int cmd_version(int argc, char** argv);
int cmd_models(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_predict(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_ngram_cache(int argc, char** argv);
int cmd_draft(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_sweep(int argc, char** argv);
int cmd_tune(int argc, char** argv);
int cmd_results(int argc, char** argv);
int cmd_export(int argc, char** argv);

}  // namespace speculum::cli
