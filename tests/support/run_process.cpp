// posix_spawn-based child process runner for CLI tests (see run_process.h).
#include "support/run_process.h"

#include "support/test_paths.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

extern char** environ;

namespace speculum::test {

static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text) {
    ProcessResult r;
    static int counter  = 0;
    std::string base    = (tmp_dir() / ("proc_" + std::to_string(getpid()) + "_" + std::to_string(counter++))).string();
    std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
    { std::ofstream(in_path, std::ios::binary) << stdin_text; }

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc    = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return r;
    int status = 0;
    struct rusage usage {};
    wait4(pid, &status, 0, &usage);
    r.max_rss_kb = usage.ru_maxrss;
    r.exit_code  = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out        = slurp(out_path);
    r.err        = slurp(err_path);
    std::remove(in_path.c_str());
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
    return r;
}

ProcessResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text) {
    std::vector<std::string> argv{cli_path().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, stdin_text);
}

}  // namespace speculum::test
