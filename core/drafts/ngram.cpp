// The statistical drafters (see ngram.h). NgramSpec's JSON lives in draft_spec.cpp beside DraftSpec's.
#include "core/drafts/ngram.h"

#include "core/file_io.h"
#include "core/hw/large_pages.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace speculum::drafts {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw std::invalid_argument("draft.ngram." + field + " " + why);
}

void check_range(int32_t v, int32_t lo, int32_t hi, const char* field) {
    if (v < lo || v > hi)
        bad(field, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(v));
}

std::string num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

bool equal_at(std::span<const int32_t> a, size_t i, std::span<const int32_t> b, size_t j, size_t n) {
    return std::equal(a.begin() + std::ptrdiff_t(i), a.begin() + std::ptrdiff_t(i + n), b.begin() + std::ptrdiff_t(j));
}

uint64_t hash_tokens(std::span<const int32_t> t) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids
    for (int32_t x : t) {
        h ^= uint32_t(x);
        h *= 1099511628211ull;
    }
    return h;
}

// ngram-cache's thresholds per n-gram size 1..4 (llama.cpp's lax ones for the context, strict for the dynamic).
constexpr int32_t kLaxMinSample[4]     = {2, 2, 1, 1};
constexpr int32_t kLaxMinPercent[4]    = {66, 50, 50, 50};
constexpr int32_t kStrictMinSample[4]  = {4, 3, 2, 2};
constexpr int32_t kStrictMinPercent[4] = {75, 66, 66, 66};

NgramKey key_of(std::span<const int32_t> t, size_t end, int32_t n) {
    NgramKey k{-1, -1, -1, -1};
    for (int32_t i = 0; i < n; ++i) k[size_t(i)] = t[end - size_t(n) + size_t(i)];
    return k;
}

}  // namespace

const char* to_string(NgramMethod m) {
    switch (m) {
        case NgramMethod::simple:
            return "ngram-simple";
        case NgramMethod::map_k:
            return "ngram-map-k";
        case NgramMethod::map_k4v:
            return "ngram-map-k4v";
        case NgramMethod::mod:
            return "ngram-mod";
        case NgramMethod::cache:
            return "ngram-cache";
        case NgramMethod::prompt_lookup:
            return "prompt-lookup";
        case NgramMethod::suffix:
            return "suffix";
    }
    return "?";
}

bool is_llama_cpp_method(NgramMethod m) {
    return m != NgramMethod::prompt_lookup && m != NgramMethod::suffix;
}

void NgramSpec::validate() const {
    check_range(size_n, 1, 1024, "size_n");
    check_range(size_m, 1, 1024, "size_m");
    check_range(min_hits, 1, 16380, "min_hits");
    check_range(mod_n_match, 1, 1024, "mod_n_match");
    check_range(mod_n_min, 0, 1024, "mod_n_min");
    check_range(mod_n_max, 1, 1024, "mod_n_max");
    if (mod_n_min > mod_n_max)
        bad("mod_n_min", "must be <= mod_n_max (" + std::to_string(mod_n_max) + "), got " + std::to_string(mod_n_min));
    check_range(mod_pool_log2, 10, 28, "mod_pool_log2");
    check_range(lookup_min, 1, 1024, "lookup_min");
    check_range(lookup_max, 1, 1024, "lookup_max");
    if (lookup_min > lookup_max)
        bad("lookup_min",
            "must be <= lookup_max (" + std::to_string(lookup_max) + "), got " + std::to_string(lookup_min));
    check_range(suffix_max_depth, 2, 1024, "suffix_max_depth");
    if (!std::isfinite(suffix_spec_factor) || suffix_spec_factor <= 0.0f || suffix_spec_factor > 1000.0f)
        bad("suffix_spec_factor", "must be in (0, 1000], got " + num(suffix_spec_factor));
    if (!std::isfinite(suffix_min_prob) || suffix_min_prob < 0.0f || suffix_min_prob > 1.0f)
        bad("suffix_min_prob", "must be in [0, 1], got " + num(suffix_min_prob));
    check_range(suffix_max_cached, 0, 1 << 24, "suffix_max_cached");
    if (method != NgramMethod::cache && (!static_cache.empty() || !dynamic_cache.empty()))
        bad(static_cache.empty() ? "dynamic_cache" : "static_cache",
            "applies only to method \"ngram-cache\", not \"" + std::string(to_string(method)) + "\"");
}

std::string NgramSpec::describe() const {
    std::string s = to_string(method);
    switch (method) {
        case NgramMethod::simple:
        case NgramMethod::map_k:
            return s + " (n " + std::to_string(size_n) + ", m " + std::to_string(size_m) + ")";
        case NgramMethod::map_k4v:
            return s + " (n " + std::to_string(size_n) + ", m " + std::to_string(size_m) + ", min hits " +
                   std::to_string(min_hits) + ")";
        case NgramMethod::mod:
            return s + " (n " + std::to_string(mod_n_match) + ", " + std::to_string(mod_n_min) + ".." +
                   std::to_string(mod_n_max) + " tokens)";
        case NgramMethod::cache:
            if (!static_cache.empty()) s += " + static " + static_cache;
            if (!dynamic_cache.empty()) s += " + dynamic " + dynamic_cache;
            return s;
        case NgramMethod::prompt_lookup:
            return s + " (match " + std::to_string(lookup_min) + ".." + std::to_string(lookup_max) + ")";
        case NgramMethod::suffix:
            return s + " (depth " + std::to_string(suffix_max_depth) + ", alpha " + num(suffix_spec_factor) +
                   ", p >= " + num(suffix_min_prob) + (suffix_tree ? ", tree" : "") + ")";
    }
    return s;
}

// ---- stateless methods ----

std::vector<int32_t> ngram_simple_draft(std::span<const int32_t> ctx, int32_t n, int32_t m) {
    if (n < 1 || m < 1 || ctx.size() < 2) return {};
    const int64_t L = int64_t(ctx.size()) - 1;  // the history; ctx.back() is the token just sampled
    if (L <= int64_t(n) + m + 1) return {};
    const size_t key = ctx.size() - size_t(n);
    for (int64_t j = L - n - 1; j >= 1; --j) {
        if (!equal_at(ctx, size_t(j), ctx, key, size_t(n))) continue;
        const int64_t copy = std::min<int64_t>(m, L - (j + n));
        if (copy < n) return {};
        return {ctx.begin() + std::ptrdiff_t(j + n), ctx.begin() + std::ptrdiff_t(j + n + copy)};
    }
    return {};
}

std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> ctx, int32_t min_n, int32_t max_n, int32_t k) {
    const size_t C = ctx.size();
    if (k <= 0 || min_n < 1 || max_n < min_n || C < size_t(min_n) + 1) return {};
    size_t best_len = 0, best_end = 0;
    for (size_t e = 1; e < C; ++e) {  // an occurrence ending at e (exclusive) is followed by ctx[e]
        size_t l = 0;
        while (l < size_t(max_n) && l < e && ctx[e - 1 - l] == ctx[C - 1 - l]) ++l;
        if (l > best_len) best_len = l, best_end = e;  // strictly longer: the earliest of the longest stays
    }
    if (best_len < size_t(min_n)) return {};
    const size_t end = std::min(C, best_end + size_t(k));
    return {ctx.begin() + std::ptrdiff_t(best_end), ctx.begin() + std::ptrdiff_t(end)};
}

// ---- NgramMap ----

NgramMap::NgramMap(int32_t n, int32_t m, bool key_only, int32_t min_hits)
    : m_n(n), m_m(m), m_min_hits(min_hits), m_key_only(key_only) {
    if (n < 1 || m < 1) throw std::invalid_argument("NgramMap: n and m must be >= 1");
}

std::vector<int32_t> NgramMap::draft(std::span<const int32_t> ctx) {
    m_last_key = m_last_value = -1;
    const int64_t L           = int64_t(ctx.size()) - 1;
    if (L < 2 * int64_t(m_n) + m_m) return {};
    const size_t key_at = ctx.size() - size_t(m_n);
    // The most recent earlier occurrence with m tokens after it inside the history.
    int64_t match = -1;
    for (int64_t j = L - m_n - m_m - 1; j >= 1; --j)
        if (equal_at(ctx, size_t(j), ctx, key_at, size_t(m_n))) {
            match = j;
            break;
        }
    if (match < 0) return {};
    const std::span<const int32_t> key_tokens = ctx.subspan(key_at, size_t(m_n));
    const uint64_t h                          = hash_tokens(key_tokens);
    int64_t ki                                = -1;
    for (size_t i : m_index[h])
        if (std::equal(key_tokens.begin(), key_tokens.end(), m_keys[i].tokens.begin())) ki = int64_t(i);
    if (ki < 0) {
        Key k;
        k.tokens.assign(key_tokens.begin(), key_tokens.end());
        k.first_pos = match;
        if (m_key_only) k.values.push_back(Value{{}, match + m_n, 1, m_m});
        ki = int64_t(m_keys.size());
        m_keys.push_back(std::move(k));
        m_index[h].push_back(size_t(ki));
    }
    Key& k      = m_keys[size_t(ki)];
    k.n_matched = std::min(k.n_matched + 1, 16380);
    if (m_key_only) {
        const int32_t len = std::min(m_m, k.values[0].n_accepted);
        m_last_key = ki, m_last_value = 0;
        return {ctx.begin() + std::ptrdiff_t(match + m_n), ctx.begin() + std::ptrdiff_t(match + m_n + len)};
    }
    if (k.n_matched < m_min_hits) return {};
    // Count the continuations of every occurrence not counted yet, up to four distinct ones.
    for (int64_t i = std::max<int64_t>(1, k.scanned); i <= match; ++i) {
        if (!equal_at(ctx, size_t(i), key_tokens, 0, size_t(m_n))) continue;
        const std::span<const int32_t> cont = ctx.subspan(size_t(i + m_n), size_t(m_m));
        bool found                          = false;
        for (Value& v : k.values)
            if (std::equal(cont.begin(), cont.end(), v.tokens.begin())) {
                ++v.count, found = true;
                break;
            }
        if (!found && k.values.size() < 4) k.values.push_back(Value{{cont.begin(), cont.end()}, i + m_n, 1, m_m});
    }
    k.scanned = match + 1;
    if (k.values.empty()) return {};
    size_t best    = 0;
    int64_t others = 0;
    for (size_t v = 1; v < k.values.size(); ++v)
        if (k.values[v].count > k.values[best].count) best = v;
    for (size_t v = 0; v < k.values.size(); ++v)
        if (v != best) others += k.values[v].count;
    if (others > 0 && k.values[best].count < 2 * others) return {};  // no dominant continuation
    const Value& v    = k.values[best];
    const int32_t len = std::min(m_m, v.n_accepted);
    m_last_key = ki, m_last_value = int64_t(best);
    return {v.tokens.begin(), v.tokens.begin() + len};
}

void NgramMap::accept(int32_t n_accepted) {
    if (m_last_key >= 0 && m_last_value >= 0)
        m_keys[size_t(m_last_key)].values[size_t(m_last_value)].n_accepted = std::max(0, n_accepted);
    m_last_key = m_last_value = -1;
}

void NgramMap::truncate(size_t len) {
    std::vector<Key> kept;
    for (Key& k : m_keys) {
        if (k.first_pos + m_n > int64_t(len)) continue;
        if (!m_key_only) {
            std::erase_if(k.values, [&](const Value& v) { return v.first_pos + m_m > int64_t(len); });
            if (k.values.empty()) continue;
            k.scanned = std::min<int64_t>(k.scanned, int64_t(len));
        }
        kept.push_back(std::move(k));
    }
    m_keys = std::move(kept);
    m_index.clear();
    for (size_t i = 0; i < m_keys.size(); ++i) m_index[hash_tokens(m_keys[i].tokens)].push_back(i);
    m_last_key = m_last_value = -1;
}

// ---- NgramMod ----

NgramMod::NgramMod(int32_t n_match, int32_t n_min, int32_t n_max, int32_t pool_log2)
    : m_n(n_match), m_n_min(n_min), m_n_max(n_max), m_pool(size_t(1) << pool_log2, -1) {
    if (n_match < 1 || n_max < 1 || pool_log2 < 1 || pool_log2 > 30)
        throw std::invalid_argument("NgramMod: bad parameters");
}

uint64_t NgramMod::slot(const int32_t* tokens) const {
    uint64_t h = 0;
    for (int32_t i = 0; i < m_n; ++i) h = h * 6364136223846793005ull + uint64_t(uint32_t(tokens[i]));
    return h & (m_pool.size() - 1);
}

void NgramMod::reset_pool() {
    std::fill(m_pool.begin(), m_pool.end(), -1);
    m_used  = 0;
    m_added = 0;
}

void NgramMod::add_upto(std::span<const int32_t> history) {
    if (history.size() <= size_t(m_n)) return;
    const size_t end = history.size() - size_t(m_n);  // position i maps history[i..i+n) -> history[i+n]
    for (size_t i = m_added; i < end; ++i) {
        int32_t& s = m_pool[slot(history.data() + i)];
        if (s >= 0) ++m_used;
        s = history[i + size_t(m_n)];
    }
    m_added = std::max(m_added, end);
}

void NgramMod::begin(std::span<const int32_t> history) {
    m_added = 0, m_last = 0;
    if (double(m_used) / double(m_pool.size()) > 0.25) reset_pool();  // too many overwrites: start clean
    add_upto(history);
}

std::vector<int32_t> NgramMod::draft(std::span<const int32_t> ctx, int32_t k) {
    m_last = 0;
    if (ctx.size() < size_t(m_n) || k <= 0) return {};
    const std::span<const int32_t> history = ctx.first(ctx.size() - 1);
    if (m_added + 32 < history.size()) add_upto(history);  // new n-grams in chunks, as llama.cpp
    const int32_t n_max = std::min(m_n_max, k), n_min = std::min(m_n_min, n_max);
    std::vector<int32_t> window(ctx.end() - m_n, ctx.end()), out;
    for (int32_t i = 0; i < n_max; ++i) {
        const int32_t t = m_pool[slot(window.data() + window.size() - size_t(m_n))];
        if (t < 0) {
            if (i < n_min) return {};
            break;
        }
        out.push_back(t);
        window.push_back(t);
    }
    m_last = int32_t(out.size());
    return out;
}

void NgramMod::accept(int32_t n_accepted) {
    if (m_last > 0 && double(n_accepted) / double(m_last) < 0.25)
        ++m_low;
    else
        m_low = 0;
    if (m_low >= 5) {  // drafts keep failing: the pool is stale
        reset_pool();
        m_low = 0;
        ++m_resets;
    }
    m_last = 0;
}

void NgramMod::truncate(size_t len) {
    m_added = std::min(m_added, len > size_t(m_n) ? len - size_t(m_n) : size_t(0));
    m_last  = 0;
}

// ---- ngram-cache ----

size_t NgramKeyHash::operator()(const NgramKey& k) const {
    return size_t(hash_tokens(std::span<const int32_t>(k.data(), k.size())));
}

void ngram_counts_update(NgramCounts& c, std::span<const int32_t> tokens, size_t from, int32_t sign, int32_t min_n,
                         int32_t max_n) {
    for (size_t i = from; i < tokens.size(); ++i)
        for (int32_t s = min_n; s <= max_n; ++s) {
            if (i < size_t(s)) break;
            const NgramKey key = key_of(tokens, i, s);
            if (sign > 0) {
                c[key][tokens[i]] += sign;
                continue;
            }
            const auto it = c.find(key);
            if (it == c.end()) continue;
            const auto jt = it->second.find(tokens[i]);
            if (jt == it->second.end()) continue;
            jt->second += sign;
            if (jt->second <= 0) it->second.erase(jt);
            if (it->second.empty()) c.erase(it);
        }
}

void ngram_counts_merge(NgramCounts& into, const NgramCounts& from) {
    for (const auto& [key, next] : from)
        for (const auto& [tok, n] : next) into[key][tok] += n;
}

NgramCounts ngram_counts_load(const std::string& path, int32_t n_vocab) {
    std::ifstream in = open_input_file(path, kMaxNgramCacheFileBytes, "n-gram cache");
    NgramCounts c;
    uint64_t offset = 0;
    auto fail       = [&](const std::string& why) {
        throw std::runtime_error(
                  "n-gram cache " + path + ": " + why + " (record at byte " + std::to_string(offset) +
                  "; llama.cpp lookup format: int32 tokens[4], int32 n, n x (int32 token, int32 count))");
    };
    auto read_i32 = [&](int32_t& v) { return bool(in.read(reinterpret_cast<char*>(&v), sizeof v)); };
    in.seekg(0, std::ios::end);
    const std::streamoff end = in.tellg();
    if (end < 0)  // a device or a /proc file: no size to check the records against
        throw std::runtime_error("n-gram cache " + path + ": cannot be read as a file (its size cannot be told)");
    const uint64_t size = uint64_t(end);
    in.seekg(0);
    // Hash maps take several times the file's 8 bytes per count: refuse before filling memory.
    const uint64_t need = size * 8, avail = hw::available_memory_bytes();
    if (avail > 0 && need > avail)
        throw std::runtime_error("n-gram cache " + path + ": its counts would take about " + byte_size_text(need) +
                                 " in memory, more than the " + byte_size_text(avail) + " available now");
    while (offset < size) {
        NgramKey key;
        int32_t n = 0;
        for (int32_t& t : key)
            if (!read_i32(t)) fail("the file ends inside a record");
        if (!read_i32(n)) fail("the file ends inside a record");
        bool pad = false;
        for (size_t i = 0; i < 4; ++i) {
            if (key[i] == -1) {
                if (i == 0) fail("the n-gram is empty");
                pad = true;
            } else if (pad) {
                fail("a token follows the -1 padding");
            } else if (key[i] < 0 || key[i] >= n_vocab) {
                fail("token " + std::to_string(key[i]) + " is outside the vocabulary of " + std::to_string(n_vocab));
            }
        }
        const uint64_t body = uint64_t(offset) + 20;
        if (n <= 0) fail("the number of next tokens is " + std::to_string(n) + ", not positive");
        if (uint64_t(n) * 8 > size - body) fail(std::to_string(n) + " next tokens do not fit in the rest of the file");
        auto& next = c[key];
        for (int32_t i = 0; i < n; ++i) {
            int32_t tok = 0, count = 0;
            if (!read_i32(tok) || !read_i32(count)) fail("the file ends inside a record");
            if (tok < 0 || tok >= n_vocab)
                fail("next token " + std::to_string(tok) + " is outside the vocabulary of " + std::to_string(n_vocab));
            if (count <= 0) fail("a count of " + std::to_string(count) + " is not positive");
            int32_t& slot = next[tok];
            slot          = int32_t(std::min<int64_t>(int64_t(slot) + count, INT32_MAX));
        }
        offset = body + uint64_t(n) * 8;
    }
    return c;
}

void ngram_counts_save(const NgramCounts& c, const std::string& path) {
    std::vector<const NgramCounts::value_type*> rows;
    rows.reserve(c.size());
    for (const auto& row : c) rows.push_back(&row);
    std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->first < b->first; });  // a stable file
    std::string bytes;
    auto put = [&](int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); };
    for (const auto* row : rows) {
        std::vector<std::pair<int32_t, int32_t>> next(row->second.begin(), row->second.end());
        std::sort(next.begin(), next.end());
        for (int32_t t : row->first) put(t);
        put(int32_t(next.size()));
        for (const auto& [tok, n] : next) put(tok), put(n);
    }
    write_file_atomic(path, bytes);
}

namespace {

// The most likely next token under `cache` for the longest n-gram of `seq` that passes the thresholds; -1 = none.
int32_t cache_lookup(const std::vector<int32_t>& seq, const NgramCounts& cache,
                     const std::unordered_map<int32_t, int32_t>* part_static, const int32_t* min_sample,
                     const int32_t* min_percent) {
    for (int32_t s = 4; s >= 1; --s) {
        if (seq.size() < size_t(s)) continue;
        const auto it = cache.find(key_of(seq, seq.size(), s));
        if (it == cache.end()) continue;
        int64_t best_score = -1, sum = 0;
        int32_t best = -1, best_count = 0;
        for (const auto& [tok, count] : it->second) {
            sum += count;
            int64_t w = 1;
            if (part_static) {
                const auto st = part_static->find(tok);
                if (st != part_static->end()) w = 100 * int64_t(st->second);
            }
            const int64_t score = int64_t(count) * w;
            if (score > best_score || (score == best_score && tok < best))
                best_score = score, best = tok, best_count = count;
        }
        if (sum >= min_sample[s - 1] && 100 * int64_t(best_count) >= int64_t(min_percent[s - 1]) * sum) return best;
    }
    return -1;
}

}  // namespace

std::vector<int32_t> ngram_cache_draft(std::span<const int32_t> ctx, int32_t k, const NgramCounts& context,
                                       const NgramCounts& dynamic, const NgramCounts& static_counts) {
    std::vector<int32_t> seq(ctx.begin(), ctx.end()), out;
    while (int32_t(out.size()) < k) {
        const std::unordered_map<int32_t, int32_t>* part_static = nullptr;
        if (seq.size() >= 2) {
            const auto it = static_counts.find(key_of(seq, seq.size(), 2));
            if (it != static_counts.end()) part_static = &it->second;
        }
        int32_t t = cache_lookup(seq, context, part_static, kLaxMinSample, kLaxMinPercent);
        if (t < 0) t = cache_lookup(seq, dynamic, part_static, kStrictMinSample, kStrictMinPercent);
        if (t < 0 && part_static) {  // the static counts alone
            int64_t sum  = 0;
            int32_t best = -1, best_count = 0;
            for (const auto& [tok, count] : *part_static) {
                sum += count;
                if (count > best_count || (count == best_count && tok < best)) best = tok, best_count = count;
            }
            if (sum >= 2 && 100 * int64_t(best_count) >= 50 * sum) t = best;
        }
        if (t < 0) break;
        out.push_back(t);
        seq.push_back(t);
    }
    return out;
}

}  // namespace speculum::drafts
