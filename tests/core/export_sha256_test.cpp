// SHA-256 through libcrypto: FIPS 180 test vectors, files spanning several read chunks, cancellation.
#include "core/export/sha256.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

using namespace speculum;

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(exporting::sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(exporting::sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    EXPECT_EQ(exporting::sha256_hex(two_blocks.data(), two_blocks.size()),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_TRUE(exporting::is_sha256_hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    EXPECT_FALSE(exporting::is_sha256_hex("248D6A61D20638B8E5C026930C3E6039A33CE45964FF2167F6ECEDD419DB06C1"));
    EXPECT_FALSE(exporting::is_sha256_hex("abc"));
}

TEST(Sha256, FileMatchesMemoryAcrossChunksAndCancels) {
    std::string data(3 * (1 << 20) + 12345, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = char((i * 131 + (i >> 11)) & 0xff);
    const auto path = test::tmp_dir() / "sha256_test.bin";
    std::ofstream(path, std::ios::binary).write(data.data(), std::streamsize(data.size()));
    double last = 0;
    EXPECT_EQ(exporting::sha256_file(path, {}, [&](double f, const std::string&) { last = f; }),
              exporting::sha256_hex(data.data(), data.size()));
    EXPECT_DOUBLE_EQ(last, 1.0);
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(exporting::sha256_file(path, cancel), Cancelled);
    EXPECT_THROW(exporting::sha256_file(test::tmp_dir() / "no_such_file.bin"), std::runtime_error);
}
