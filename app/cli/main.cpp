// speculum-cli: the headless front end over the core library, for scripts, CI and clusters.
// Each subcommand lives in cmd_<name>.cpp and is listed once in the table below.
#include "cli.h"

#include "core/version.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

namespace speculum::cli {

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"version", "print the version, build type and library versions", cmd_version},
        {"models", "list the bundled models, prompt suites, hardware profiles and configs", cmd_models},
        {"inspect", "show a GGUF file: metadata, hyper-parameters, tensors", cmd_inspect},
        {"generate", "generate tokens with one model (plain decoding, no speculation)", cmd_generate},
        {"bench", "measure the model runtime: tokens/s, GB/s vs memory bandwidth, batched passes", cmd_bench},
        {"predict", "predict speedup analytically (EWIF, BPT, J, trees, roofline) from JSON", cmd_predict},
        {"calibrate", "measure this machine as a hardware profile, or fit the model to run reports (--report)",
         cmd_calibrate},
        {"tokenize", "print the token ids of a text under a GGUF model's tokenizer", cmd_tokenize},
        {"ngram-cache", "create, merge or describe llama.cpp lookup caches for the ngram-cache drafter",
         cmd_ngram_cache},
        {"draft", "build a draft from a spec and print its bit accounting; optionally save it as GGUF", cmd_draft},
        {"run", "run speculative decoding from a config and measure it against plain decoding", cmd_run},
        {"tune", "find the best way to draft for a target on this machine: measured, pruned by the models, confirmed",
         cmd_tune},
        {"sweep", "run a design-space sweep into a SQLite result store (resumable)", cmd_sweep},
        {"results", "query a result store: filter, CSV, Pareto frontier, best per task", cmd_results},
        {"export", "export a configuration: manifest, draft GGUF, llama.cpp/vLLM/SGLang, CSV, report, SVG/PNG",
         cmd_export},
    };
    return table;
}

static void print_help() {
    std::cout << "speculum-cli " << SPECULUM_VERSION
              << ": explore the design space of speculative decoding (headless)\n\n"
                 "usage: speculum-cli COMMAND [options] [args]\n"
                 "       speculum-cli COMMAND --help     options of one command\n\ncommands:\n";
    for (const auto& c : commands()) {
        std::string name = c.name;
        name.resize(12, ' ');
        std::cout << "  " << name << c.summary << '\n';
    }
    std::cout << "\nexit status: 0 success, 1 failure (the message says why), 2 bad usage\n";
}

}  // namespace speculum::cli

namespace {

// What a command printed must have reached standard output (a full disk, a closed pipe): results, exports and tables
// are its product, so a lost write fails the command (exit 1) instead of passing for a success.
int stdout_checked(int rc, const std::string& who) {
    errno = 0;
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::cerr << who << ": error: writing to standard output failed"
                  << (errno ? std::string(" (") + std::strerror(errno) + ")" : std::string()) << '\n';
        return 1;
    }
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace speculum::cli;
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
        print_help();
        return stdout_checked(argc < 2 ? 2 : 0, "speculum-cli");
    }
    if (!std::strcmp(argv[1], "--version")) {
        std::cout << "speculum-cli " << SPECULUM_VERSION << '\n';
        return stdout_checked(0, "speculum-cli");
    }
    for (const auto& c : commands()) {
        if (std::strcmp(argv[1], c.name) != 0) continue;
        try {
            return stdout_checked(c.run(argc - 1, argv + 1), std::string("speculum-cli ") + c.name);
        } catch (const UsageError& e) {
            std::cerr << "speculum-cli " << c.name << ": " << e.what() << "\n(see: speculum-cli " << c.name
                      << " --help)\n";
            return 2;
        } catch (const std::exception& e) {
            std::cerr << "speculum-cli " << c.name << ": error: " << e.what() << '\n';
            return 1;
        }
    }
    std::cerr << "speculum-cli: unknown command '" << argv[1] << "' (see: speculum-cli --help)\n";
    return 2;
}
