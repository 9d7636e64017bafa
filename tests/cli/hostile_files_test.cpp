// Issue #27, items 2 and 4, through the real binary: special files and huge inputs are refused by name before
// anything is read (tokenize --file /dev/zero grew to 3.9 GB, predict/sweep/calibrate on /dev/zero hung), a large
// text is tokenized in bounded memory, and output that cannot be written is an error (exit 1) that leaves any
// earlier file whole (run --report, calibrate -o and draft -o reported success on a full disk or /dev/full).
#include "core/model/synthetic.h"
#include "kernels/gemv.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

using namespace speculum;
namespace fs = std::filesystem;

namespace {

std::string write(const std::string& name, const std::string& text) {
    const std::string path = (test::tmp_dir() / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// Tokenizing 24 MB whole takes about 770 MB. Streamed it takes tens of MB, or about 580 MB under AddressSanitizer,
// whose shadow memory and quarantine of freed blocks count in the resident set.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kStreamedRssLimitKb = 700 * 1024;
#else
constexpr long kStreamedRssLimitKb = 200 * 1024;
#endif

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(HostileFiles, SpecialFilesAreRefusedByNameBeforeReading) {
    const std::string db                                 = (test::tmp_dir() / "hostile_files.sqlite").string();
    const std::vector<std::vector<std::string>> commands = {
        {"tokenize", "--file", "/dev/zero"},
        {"tokenize", "--file", "/dev/urandom"},
        {"predict", "/dev/zero"},
        {"sweep", "/dev/zero", "--db", db},
        {"calibrate", "--report", "/dev/zero"},
        {"run", "--config", "/dev/zero"},
        {"draft", "--spec", "/dev/zero"},
        {"export", "--config", "/dev/zero", "--format", "llama.cpp"},
    };
    for (const auto& args : commands) {
        const auto r = test::run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
        EXPECT_TRUE(contains(r.err, "not a regular file")) << args[0] << ": " << r.err;
        EXPECT_LT(r.max_rss_kb, 512 * 1024) << args[0];
    }
    const auto dir = test::run_cli({"predict", test::tmp_dir().string()});
    EXPECT_EQ(dir.exit_code, 1);
    EXPECT_TRUE(contains(dir.err, "is a directory")) << dir.err;
}

TEST(HostileFiles, InputsLargerThanTheirKindsLimitAreRefusedWithTheLimit) {
    // A sparse 17 MiB config: refused from its size, nothing read.
    const std::string big = (test::tmp_dir() / "huge_config.json").string();
    { std::ofstream(big) << "{}"; }
    fs::resize_file(big, (17u << 20));
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", "--config", big}, std::vector<std::string>{"predict", big}}) {
        const auto r = test::run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_TRUE(contains(r.err, "the limit is 16 MiB")) << r.err;
        EXPECT_TRUE(contains(r.err, "huge_config.json")) << r.err;
    }
    // A 1 MB sweep name (a 50 MB one hung the sweep): refused with the limit.
    const std::string spec = write("long_name_spec.json", R"({"name": ")" + std::string(1 << 20, 'n') +
                                                              R"(", "evaluator": "predict", "base": {}, "axes": []})");
    const auto r           = test::run_cli({"sweep", spec, "--db", (test::tmp_dir() / "long_name.sqlite").string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "the limit is 256")) << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), 4096u) << "the message does not repeat the name";
}

TEST(HostileFiles, TokenizeStreamsALargeTextInBoundedMemory) {
    // 24 MB of text: the ids equal those of the same text given whole, and memory stays far below the ~30 bytes per
    // input byte that tokenizing it whole takes.
    std::string line = "The quick brown fox jumps over the lazy dog, then reads 12345 lines of code.\n";
    std::string text;
    while (text.size() < (24u << 20)) text += line;
    const std::string path = write("large_text.txt", text);
    const auto big         = test::run_cli({"tokenize", "--file", path});
    ASSERT_EQ(big.exit_code, 0) << big.err;
    EXPECT_LT(big.max_rss_kb, kStreamedRssLimitKb) << "peak resident memory";
    const auto one = test::run_cli({"tokenize", "--file", write("one_line.txt", line + line)});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    // Every line gives the same ids; the streamed output begins with the ids of two lines.
    const std::string two_lines = one.out.substr(0, one.out.size() - 1);  // without the newline
    EXPECT_EQ(big.out.compare(0, two_lines.size(), two_lines), 0);
    EXPECT_EQ(big.out.back(), '\n');
    fs::remove(path);
}

namespace {

std::string tiny_target() {
    static const std::string path = [] {
        model::SyntheticSpec s;
        s.n_vocab = 128, s.n_embd = 64, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 256;
        s.type = kernels::GgmlType::F16, s.seed = 7;
        const std::string p = (test::tmp_dir() / "hostile_files_target.gguf").string();
        model::write_synthetic_gguf(s, p);
        return p;
    }();
    return path;
}

// A small tmpfs, filled to the last page, with report.json ("OLD") already on it. Root only (mount); unmounted on
// destruction.
struct FullDisk {
    fs::path dir;
    bool mounted = false;
    FullDisk() {
        dir = test::tmp_dir() / ("full_disk_" + std::to_string(getpid()));
        fs::create_directories(dir);
        if (geteuid() != 0) return;
        const auto r = test::run_process({"/bin/mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir.string()});
        mounted      = r.exit_code == 0;
        if (!mounted) return;
        std::ofstream(dir / "report.json") << "OLD\n";
        std::ofstream filler(dir / "filler", std::ios::binary);
        const std::string block(4096, 'x');
        for (int i = 0; i < 1000 && filler.write(block.data(), std::streamsize(block.size())); ++i) filler.flush();
    }
    ~FullDisk() {
        if (mounted) test::run_process({"/bin/umount", dir.string()});
    }
    size_t leftovers() const {  // temporary files a failed write left behind
        size_t n = 0;
        for (const auto& e : fs::directory_iterator(dir))
            n += e.path().filename().string().find(".tmp") != std::string::npos;
        return n;
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(HostileFiles, AFullDiskIsAnErrorAndLeavesEarlierFilesWhole) {
    const std::string target = tiny_target();
    ASSERT_TRUE(fs::exists(target));
    const std::string cfg         = write("full_disk_cfg.json", R"({"levels": [{"kind": "self", "exit_layer": 1}],
        "gamma": [3], "max_new_tokens": 8, "prompt_ids": [5, 17, 3, 42]})");
    const std::string good_report = (test::tmp_dir() / "full_disk_good_report.json").string();
    ASSERT_EQ(test::run_cli({"run", "--config", cfg, "-m", target, "--report", good_report}).exit_code, 0);

    // /dev/full (or any device) is refused as an output, whoever runs it: renaming over it would replace the node.
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", "--config", cfg, "-m", target, "--report", "/dev/full"},
          std::vector<std::string>{"draft", "-m", target, "--spec", R"({"exit_layer": 1})", "-o", "/dev/full"},
          std::vector<std::string>{"calibrate", "--report", good_report, "-o", "/dev/full"}}) {
        const auto r = test::run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err << r.out;
        EXPECT_TRUE(contains(r.err, "/dev/full: not a regular file")) << args[0] << ": " << r.err;
        EXPECT_FALSE(contains(r.out, "saved")) << r.out;
    }
    struct stat st {};
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full is still the device";

    FullDisk disk;
    if (!disk.mounted) GTEST_SKIP() << "a small tmpfs needs root (mount); the /dev/full checks ran";
    const fs::path report = disk.dir / "report.json";
    auto r                = test::run_cli({"run", "--config", cfg, "-m", target, "--report", report.string()});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(contains(r.err, "report.json")) << r.err;
    EXPECT_TRUE(contains(r.err, "No space left")) << r.err;
    EXPECT_EQ(slurp(report), "OLD\n") << "the earlier report is untouched";

    r = test::run_cli({"calibrate", "--report", good_report, "-o", (disk.dir / "calibration.json").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "calibration.json")) << r.err;
    EXPECT_FALSE(contains(r.err, "wrote")) << r.err;
    EXPECT_FALSE(fs::exists(disk.dir / "calibration.json"));

    r = test::run_cli({"draft", "-m", target, "--spec", R"({"exit_layer": 1})", "-o", (disk.dir / "d.gguf").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_FALSE(contains(r.out, "saved")) << r.out;
    EXPECT_FALSE(fs::exists(disk.dir / "d.gguf"));

    r = test::run_cli(
        {"export", "--format", "manifest", "--config", cfg, "-m", target, "-o", (disk.dir / "manifest.json").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_FALSE(fs::exists(disk.dir / "manifest.json"));
    // A separate draft model exported as draft GGUF is a copy of its file (issue #51, item 7: raw std::filesystem
    // text and a 0-byte file before).
    const std::string sep =
        write("full_disk_sep.json",
              std::string(R"({"levels": [{"kind": "model", "model_path": ")") + target + R"("}], "gamma": [3]})");
    r = test::run_cli(
        {"export", "--format", "draft-gguf", "--config", sep, "-m", target, "-o", (disk.dir / "draft.gguf").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "write failed, nothing written")) << r.err;
    EXPECT_FALSE(fs::exists(disk.dir / "draft.gguf"));
    EXPECT_EQ(disk.leftovers(), 0u) << "no temporary file is left behind";
}

TEST(HostileFiles, ASyntheticModelLargerThanMemoryIsRefusedBeforeAllocating) {
    // 64 layers 65536 wide: terabytes of f16. It allocated 4 GB over 21 s before bad_alloc.
    const auto r = test::run_cli({"bench", "--synthetic", "f16", "--embd", "65536", "--layers", "64"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "of memory available now")) << r.err;
    EXPECT_LT(r.max_rss_kb, 256 * 1024);
}

TEST(HostileFiles, OptionsAreCheckedBeforeAnyWork) {
    // A numeric option that the chosen mode would not read is still checked (exit 2, usage), and a bad number or
    // output path stops draft before it builds anything.
    auto r = test::run_cli({"export", "--format", "csv", "--level", "abc"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "--level' expects an integer")) << r.err;
    r = test::run_cli({"draft", "-m", tiny_target(), "--spec", R"({"exit_layer": 1})", "--bench", "1e21"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(contains(r.err + r.out, "building")) << r.err;
    r = test::run_cli({"draft", "-m", tiny_target(), "--spec", R"({"exit_layer": 1})", "--bench", "100000"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(contains(r.err + r.out, "building")) << r.err;
    r = test::run_cli({"draft", "-m", tiny_target(), "--spec", R"({"exit_layer": 1})", "-o", "/no/such/dir/d.gguf"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "does not exist")) << r.err;
    EXPECT_FALSE(contains(r.err + r.out, "building")) << r.err;
}
