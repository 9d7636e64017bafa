// Lenient UTF-8 decoding and GPT-2's byte <-> code point mapping, matching llama.cpp's unicode.cpp behaviour.
#include "core/model/tokenizer_impl.h"

#include <array>

namespace speculum::model::detail {

std::vector<uint32_t> utf8_to_cpts(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    auto cont = [&](size_t i) { return i < s.size() && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80; };
    size_t i  = 0;
    while (i < s.size()) {
        const uint8_t b = static_cast<uint8_t>(s[i]);
        uint32_t cpt    = 0xFFFD;
        size_t len      = 1;
        if (b < 0x80) {
            cpt = b;
        } else if ((b & 0xE0) == 0xC0) {
            if (cont(i + 1)) cpt = ((b & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu), len = 2;
        } else if ((b & 0xF0) == 0xE0) {
            if (cont(i + 1) && cont(i + 2))
                cpt = ((b & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 6) |
                      (static_cast<uint8_t>(s[i + 2]) & 0x3Fu),
                len = 3;
        } else if ((b & 0xF8) == 0xF0) {
            if (cont(i + 1) && cont(i + 2) && cont(i + 3)) {
                const uint32_t c = ((b & 0x07u) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 12) |
                                   ((static_cast<uint8_t>(s[i + 2]) & 0x3Fu) << 6) |
                                   (static_cast<uint8_t>(s[i + 3]) & 0x3Fu);
                if (c <= 0x10FFFF) cpt = c, len = 4;
            }
        }
        out.push_back(cpt);
        i += len;
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
    if (cpt <= 0x7F) {
        out.push_back(static_cast<char>(cpt));
    } else if (cpt <= 0x7FF) {
        out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else if (cpt <= 0xFFFF) {
        out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | ((cpt >> 18) & 0x07)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    }
}

namespace {

struct ByteMap {
    std::array<std::string, 256> to_unicode;
    std::array<uint32_t, 256> cpt{};
    std::array<int16_t, 512> from{};  // code point -> byte, -1 when unmapped (all mapped code points are < 512)
    ByteMap() {
        from.fill(-1);
        auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
        uint32_t next  = 256;
        for (int b = 0; b < 256; ++b) {
            cpt[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
            append_utf8(to_unicode[b], cpt[b]);
            from[cpt[b]] = static_cast<int16_t>(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) {
    return byte_map().to_unicode[byte];
}

int byte_from_unicode(uint32_t cpt) {
    return cpt < 512 ? byte_map().from[cpt] : -1;
}

}  // namespace speculum::model::detail
