// Runs a child process (argv, no shell) with optional stdin text, capturing stdout, stderr and exit code.
#pragma once

#include <string>
#include <vector>

namespace speculum::test {

struct ProcessResult {
    int exit_code = -1;  // -1 when the process could not be started; 128+N when killed by signal N
    std::string out;
    std::string err;
    long max_rss_kb = 0;  // the child's peak resident memory
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text = "");

// Convenience: speculum-cli with these arguments.
ProcessResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text = "");

}  // namespace speculum::test
