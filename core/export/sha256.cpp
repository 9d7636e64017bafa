// SHA-256 through libcrypto's EVP interface (see sha256.h).
#include "core/export/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace speculum::exporting {

namespace {

struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

MdCtx new_sha256() {
    MdCtx ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("libcrypto: cannot initialise SHA-256");
    return ctx;
}

std::string finish(EVP_MD_CTX* ctx) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx, md, &n) != 1 || n != 32) throw std::runtime_error("libcrypto: SHA-256 failed");
    static const char* digits = "0123456789abcdef";
    std::string hex(64, '0');
    for (unsigned int i = 0; i < n; ++i) {
        hex[2 * i]     = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    return hex;
}

}  // namespace

std::string sha256_hex(const void* data, size_t n) {
    MdCtx ctx = new_sha256();
    if (EVP_DigestUpdate(ctx.get(), data, n) != 1) throw std::runtime_error("libcrypto: SHA-256 failed");
    return finish(ctx.get());
}

std::string sha256_file(const std::filesystem::path& file, const CancelToken& cancel, const ProgressFn& progress) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(file.string() + ": cannot open the file to hash it");
    std::error_code ec;
    const uintmax_t total = std::filesystem::file_size(file, ec);
    MdCtx ctx             = new_sha256();
    std::vector<char> buf(1 << 20);
    uintmax_t done = 0;
    while (in) {
        cancel.throw_if_cancelled();
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const std::streamsize got = in.gcount();
        if (got <= 0) break;
        if (EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(got)) != 1)
            throw std::runtime_error("libcrypto: SHA-256 failed");
        done += static_cast<uintmax_t>(got);
        if (!ec && total > 0) report(progress, double(done) / double(total), "hashing " + file.filename().string());
    }
    if (in.bad()) throw std::runtime_error(file.string() + ": read error while hashing");
    return finish(ctx.get());
}

bool is_sha256_hex(const std::string& s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace speculum::exporting
