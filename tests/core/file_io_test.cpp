// core/file_io (issue #27, items 2 and 4): input files are regular and within their kind's limit; output files are
// written whole or not at all, keep an existing file's permissions, and never replace a device or a folder.
#include "core/file_io.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <sys/stat.h>

using namespace speculum;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
    const fs::path dir = test::tmp_dir() / "file_io";
    fs::create_directories(dir);
    fs::remove(dir / name);
    return dir / name;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t temporaries(const fs::path& dir) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        n += e.path().filename().string().find(".tmp.") != std::string::npos;
    return n;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(FileIo, ReadsRegularFilesWithinTheLimit) {
    const fs::path p = scratch("in.json");
    std::ofstream(p) << "0123456789";
    EXPECT_EQ(read_input_file(p.string(), 10, "config file"), "0123456789");
    EXPECT_NE(error_of([&] { read_input_file(p.string(), 9, "config file"); }).find("the limit is 9 bytes"),
              std::string::npos);
    EXPECT_NE(error_of([&] { read_input_file("/dev/zero", 100, "config file"); }).find("not a regular file"),
              std::string::npos);
    EXPECT_NE(error_of([&] { read_input_file(p.parent_path().string(), 100, "config file"); }).find("is a directory"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  read_input_file((p.string() + ".absent"), 100, "config file");
              }).find("cannot open the config file: No such file"),
              std::string::npos);
    std::istringstream big(std::string(5000, 'x'));
    EXPECT_NE(error_of([&] { read_input_stream(big, 4096, "standard input"); }).find("more than 4 KiB"),
              std::string::npos);
    EXPECT_EQ(byte_size_text(16ull << 20), "16 MiB");
    EXPECT_EQ(byte_size_text(1ull << 30), "1 GiB");
    EXPECT_EQ(byte_size_text(1000), "1000 bytes");
}

TEST(FileIo, AnOutputFileIsWholeOrAbsent) {
    const fs::path p = scratch("out.txt");
    std::ofstream(p) << "old";
    ::chmod(p.c_str(), 0640);
    {
        OutputFile f(p.string());
        f.write("half of the new text");
        EXPECT_EQ(slurp(p), "old") << "nothing shows before commit";
    }  // destroyed without commit: as if an exception had left the writer
    EXPECT_EQ(slurp(p), "old");
    EXPECT_EQ(temporaries(p.parent_path()), 0u);
    write_file_atomic(p.string(), "new");
    EXPECT_EQ(slurp(p), "new");
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u) << "an overwritten file keeps its permissions";
    EXPECT_EQ(temporaries(p.parent_path()), 0u);
}

TEST(FileIo, DevicesFoldersAndMissingFoldersAreRefused) {
    EXPECT_NE(error_of([] { write_file_atomic("/dev/full", "x"); }).find("not a regular file"), std::string::npos);
    EXPECT_NE(error_of([] { write_file_atomic("/dev/null", "x"); }).find("not a regular file"), std::string::npos);
    struct stat st {};
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    const fs::path dir = scratch("a_folder");
    fs::create_directories(dir);
    EXPECT_NE(error_of([&] { write_file_atomic(dir.string(), "x"); }).find("is a directory"), std::string::npos);
    EXPECT_NE(error_of([&] { check_output_file((dir / "no" / "x.json").string()); }).find("does not exist"),
              std::string::npos);
    EXPECT_EQ(error_of([&] { check_output_file((dir / "x.json").string()); }), "");
}
