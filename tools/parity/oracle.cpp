// Development-time oracle: a small driver over an out-of-tree llama.cpp build (see tools/parity/README.md).
// It is never built by ./dev; build_oracle.sh compiles it against a llama.cpp source tree.
//
//   oracle logits   MODEL.gguf IDS OUT.f32   logits of every position of the comma-separated ids, one pass
//   oracle tokenize MODEL.gguf TEXT_FILE     ids of the file's text (add_special, parse_special off), one line
//   oracle cases    MODEL.gguf INP OUT       llama.cpp's test-tokenizer layout: INP holds texts separated by
//                                            "\n__ggml_vocab_test__\n", OUT gets one line of ids per text
//   oracle chat     TEMPLATE_FILE MSGS ADD   llama_chat_apply_template over MSGS ("role\tcontent" per line,
//                                            "\\n" for a newline), ADD = 1 adds the assistant prefix
//   oracle bench    MODEL.gguf PP TG THREADS prompt and generation throughput (tokens/s), llama-bench style
//   oracle set      IN.gguf OUT.gguf KEY VALUE   a copy with one string (or "true"/"false") key set
//   oracle quantize IN.gguf OUT.gguf TYPE    every 2-D weight quantized to TYPE by ggml (q4_k, q2_k, iq4_xs, ...;
//                                            q4_k_m: llama-quantize's Q4_K / Q6_K mix)
//   oracle dflash   TARGET.gguf DRAFT.gguf IDS LAST ROWS MASK OUT.f32 [CONF.f32]
//                                            a block draft's pass as common/speculative.cpp drives it: the target
//                                            decodes IDS keeping its target_layers' inputs, the draft's encoder fuses
//                                            them and their K/V enter the draft's cache at positions 0..n-1, then one
//                                            non-causal pass over [LAST, MASK x ROWS-1] at positions n..; OUT gets
//                                            the ROWS x n_vocab logits (DSpark's Markov bias included), CONF the
//                                            DSpark confidence of each row
#include "gguf.h"
#include "llama-ext.h"
#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void quiet_log(enum lm_ggml_log_level, const char*, void*) {}

static std::string read_all(const char* path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "oracle: cannot read %s\n", path);
        std::exit(2);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

static llama_model* load(const char* path) {
    llama_model_params mp = llama_model_default_params();
    llama_model* m        = llama_model_load_from_file(path, mp);
    if (!m) {
        std::fprintf(stderr, "oracle: cannot load %s\n", path);
        std::exit(2);
    }
    return m;
}

static llama_context* context(llama_model* m, int n_ctx, int threads, llama_context* other = nullptr) {
    llama_context_params cp = llama_context_default_params();
    cp.ctx_other            = other;
    cp.n_ctx                = n_ctx;
    cp.n_batch              = n_ctx;
    cp.n_ubatch             = n_ctx;
    cp.n_threads            = threads;
    cp.n_threads_batch      = threads;
    cp.type_k          = LM_GGML_TYPE_F32;  // f32 KV, as Speculum's cache: removes one rounding from the comparison
    cp.type_v          = LM_GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* c   = llama_init_from_model(m, cp);
    if (!c) {
        std::fprintf(stderr, "oracle: cannot make a context\n");
        std::exit(2);
    }
    return c;
}

static std::vector<llama_token> tokenize(const llama_vocab* v, const std::string& text, bool special) {
    std::vector<llama_token> ids(text.size() + 16);
    int n = llama_tokenize(v, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), special, false);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(v, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), special, false);
    }
    ids.resize(n);
    return ids;
}

static int cmd_logits(int argc, char** argv) {
    if (argc < 5) return 1;
    llama_model* m = load(argv[2]);
    std::vector<llama_token> ids;
    for (const char* p = argv[3]; *p;) {
        ids.push_back((llama_token)std::strtol(p, nullptr, 10));
        p = std::strchr(p, ',');
        if (!p) break;
        ++p;
    }
    llama_context* c = context(m, (int)ids.size() < 64 ? 64 : (int)ids.size(), 1);
    llama_batch b    = llama_batch_init((int32_t)ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); ++i) {
        b.token[i]     = ids[i];
        b.pos[i]       = (llama_pos)i;
        b.n_seq_id[i]  = 1;
        b.seq_id[i][0] = 0;
        b.logits[i]    = 1;
    }
    b.n_tokens = (int32_t)ids.size();
    if (llama_decode(c, b) != 0) {
        std::fprintf(stderr, "oracle: decode failed\n");
        return 2;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    FILE* out         = std::fopen(argv[4], "wb");
    if (!out) return 2;
    for (size_t i = 0; i < ids.size(); ++i)
        std::fwrite(llama_get_logits_ith(c, (int32_t)i), sizeof(float), n_vocab, out);
    std::fclose(out);
    std::printf("%zu positions x %d logits\n", ids.size(), n_vocab);
    llama_batch_free(b);
    llama_free(c);
    llama_model_free(m);
    return 0;
}

static int cmd_cases(int argc, char** argv) {
    if (argc < 5) return 1;
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only         = true;
    llama_model* m        = llama_model_load_from_file(argv[2], mp);
    if (!m) return 2;
    const llama_vocab* v  = llama_model_get_vocab(m);
    const std::string all = read_all(argv[3]);
    const std::string sep = "\n__ggml_vocab_test__\n";
    FILE* out             = std::fopen(argv[4], "wb");
    size_t at             = 0;
    while (at < all.size()) {
        size_t e = all.find(sep, at);
        if (e == std::string::npos) e = all.size();
        const std::vector<llama_token> ids = tokenize(v, all.substr(at, e - at), false);
        for (size_t i = 0; i < ids.size(); ++i) std::fprintf(out, i ? " %d" : "%d", ids[i]);
        std::fprintf(out, "\n");
        at = e + sep.size();
    }
    std::fclose(out);
    llama_model_free(m);
    return 0;
}

static int cmd_tokenize(int argc, char** argv) {
    if (argc < 4) return 1;
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only         = true;
    llama_model* m        = llama_model_load_from_file(argv[2], mp);
    if (!m) return 2;
    const std::vector<llama_token> ids = tokenize(llama_model_get_vocab(m), read_all(argv[3]), true);
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    llama_model_free(m);
    return 0;
}

static std::string unescape(const std::string& s) {
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
            r += '\n';
            ++i;
        } else
            r += s[i];
    }
    return r;
}

static int cmd_chat(int argc, char** argv) {
    if (argc < 5) return 1;
    const std::string tmpl = read_all(argv[2]);
    std::vector<std::string> roles, contents;
    std::istringstream lines(read_all(argv[3]));
    for (std::string line; std::getline(lines, line);) {
        const size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        roles.push_back(line.substr(0, tab));
        contents.push_back(unescape(line.substr(tab + 1)));
    }
    std::vector<llama_chat_message> msgs;
    for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
    std::vector<char> buf(1 << 16);
    const int n = llama_chat_apply_template(tmpl.c_str(), msgs.data(), msgs.size(), std::atoi(argv[4]) != 0, buf.data(),
                                            (int32_t)buf.size());
    if (n < 0) {
        std::fprintf(stderr, "oracle: template not supported\n");
        return 3;
    }
    std::fwrite(buf.data(), 1, (size_t)n, stdout);
    return 0;
}

static int cmd_bench(int argc, char** argv) {
    if (argc < 6) return 1;
    const int pp = std::atoi(argv[3]), tg = std::atoi(argv[4]), th = std::atoi(argv[5]);
    llama_model* m    = load(argv[2]);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    llama_context* c  = context(m, pp + tg + 8, th);
    std::vector<llama_token> ids(pp);
    for (int i = 0; i < pp; ++i) ids[i] = (llama_token)((i * 7919 + 13) % n_vocab);
    using clk = std::chrono::steady_clock;
    {  // one untimed token, then an empty cache (llama-bench's warm-up)
        llama_token w = ids[0];
        if (llama_decode(c, llama_batch_get_one(&w, 1)) != 0) return 2;
        llama_memory_clear(llama_get_memory(c), true);
    }
    auto t0 = clk::now();
    if (llama_decode(c, llama_batch_get_one(ids.data(), pp)) != 0) return 2;
    auto t1       = clk::now();
    llama_token t = ids.back();
    for (int i = 0; i < tg; ++i) {
        if (llama_decode(c, llama_batch_get_one(&t, 1)) != 0) return 2;
        t = (llama_token)((t * 31 + 7) % n_vocab);
    }
    auto t2           = clk::now();
    const double s_pp = std::chrono::duration<double>(t1 - t0).count();
    const double s_tg = std::chrono::duration<double>(t2 - t1).count();
    std::printf("pp%d %.2f t/s  tg%d %.2f t/s\n", pp, pp / s_pp, tg, tg / s_tg);
    llama_free(c);
    llama_model_free(m);
    return 0;
}

// Every 2-D weight of IN quantized to TYPE by ggml's own quantizer (lm_ggml_quantize_chunk, no importance matrix: what
// llama-quantize calls per tensor; the npm mirror ships no llama-quant.cpp, so the one per-tensor mix, q4_k_m, follows
// llama-quantize's rule as written below).
static int cmd_quantize(int argc, char** argv) {
    if (argc < 5) return 1;
    static const struct {
        const char* name;
        lm_ggml_type type;
    } types[] = {
        {"q8_0", LM_GGML_TYPE_Q8_0}, {"q4_0", LM_GGML_TYPE_Q4_0},     {"q4_1", LM_GGML_TYPE_Q4_1},
        {"q5_0", LM_GGML_TYPE_Q5_0}, {"q5_1", LM_GGML_TYPE_Q5_1},     {"q2_k", LM_GGML_TYPE_Q2_K},
        {"q3_k", LM_GGML_TYPE_Q3_K}, {"q4_k", LM_GGML_TYPE_Q4_K},     {"q5_k", LM_GGML_TYPE_Q5_K},
        {"q6_k", LM_GGML_TYPE_Q6_K}, {"iq4_nl", LM_GGML_TYPE_IQ4_NL}, {"iq4_xs", LM_GGML_TYPE_IQ4_XS},
        {"bf16", LM_GGML_TYPE_BF16}, {"f16", LM_GGML_TYPE_F16},
    };
    // q4_k_m: llama-quantize's Q4_K_M mix, by its rule: Q6_K for output.weight and for attn_v / ffn_down of the
    // layers use_more_bits picks (the first and last eighth, and every third between), Q4_K for the rest.
    const bool q4_k_m = std::strcmp(argv[4], "q4_k_m") == 0;
    lm_ggml_type type = q4_k_m ? LM_GGML_TYPE_Q4_K : LM_GGML_TYPE_COUNT;
    for (const auto& t : types)
        if (std::strcmp(t.name, argv[4]) == 0) type = t.type;
    if (type == LM_GGML_TYPE_COUNT) {
        std::fprintf(stderr, "oracle: unknown type %s\n", argv[4]);
        return 2;
    }
    lm_ggml_context* in_data = nullptr;
    lm_gguf_init_params ip   = {false, &in_data};
    lm_gguf_context* in      = lm_gguf_init_from_file(argv[2], ip);
    if (!in) return 2;
    lm_gguf_context* out = lm_gguf_init_empty();
    lm_gguf_set_kv(out, in);
    lm_ggml_init_params cp = {1 << 20, nullptr, true};
    lm_ggml_context* meta  = lm_ggml_init(cp);
    std::vector<std::vector<char>> keep;
    for (int64_t i = 0; i < lm_gguf_get_n_tensors(in); ++i) {
        const char* name    = lm_gguf_get_tensor_name(in, i);
        lm_ggml_tensor* src = lm_ggml_get_tensor(in_data, name);
        lm_ggml_type t      = type;
        if (q4_k_m) {
            const std::string nm = name;
            int layer            = -1;
            std::sscanf(name, "blk.%d.", &layer);
            const int64_t ka      = lm_gguf_find_key(in, "general.architecture");
            const std::string key = std::string(ka >= 0 ? lm_gguf_get_val_str(in, ka) : "llama") + ".block_count";
            const int64_t kb      = lm_gguf_find_key(in, key.c_str());
            const int n_layer     = kb >= 0 ? (int)lm_gguf_get_val_u32(in, kb) : 0;
            const bool more =
                layer >= 0 && (layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2);
            const bool widened =
                nm.find("attn_v.weight") != std::string::npos || nm.find("ffn_down.weight") != std::string::npos;
            if (nm == "output.weight" || (widened && more)) t = LM_GGML_TYPE_Q6_K;
        }
        const bool quantize = lm_ggml_n_dims(src) == 2 && src->ne[0] % lm_ggml_blck_size(t) == 0;
        lm_ggml_tensor* dst = lm_ggml_new_tensor(meta, quantize ? t : src->type, lm_ggml_n_dims(src), src->ne);
        lm_ggml_set_name(dst, name);
        if (quantize) {
            const int64_t n = lm_ggml_nelements(src), rows = n / src->ne[0];
            std::vector<float> f32(n);
            if (src->type == LM_GGML_TYPE_F16)
                lm_ggml_fp16_to_fp32_row((const lm_ggml_fp16_t*)src->data, f32.data(), n);
            else if (src->type == LM_GGML_TYPE_F32)
                std::memcpy(f32.data(), src->data, n * sizeof(float));
            else {
                std::fprintf(stderr, "oracle: %s: quantize from f16 or f32 only\n", name);
                return 2;
            }
            keep.emplace_back(lm_ggml_row_size(t, src->ne[0]) * rows);
            lm_ggml_quantize_chunk(t, f32.data(), keep.back().data(), 0, rows, src->ne[0], nullptr);
        } else {
            keep.emplace_back((const char*)src->data, (const char*)src->data + lm_ggml_nbytes(src));
        }
        dst->data = keep.back().data();
        lm_gguf_add_tensor(out, dst);
    }
    const bool ok = lm_gguf_write_to_file(out, argv[3], false);
    lm_gguf_free(out);
    lm_gguf_free(in);
    lm_ggml_free(meta);
    lm_ggml_free(in_data);
    return ok ? 0 : 2;
}

// A copy of a vocabulary GGUF with one metadata string changed (tokenizer.ggml.pre: the same merges split by another
// family's pre-tokenizer; tokenizer.ggml.add_space_prefix as "false"), for tokenizer goldens.
static int cmd_set(int argc, char** argv) {
    if (argc < 6) return 1;
    lm_ggml_context* data  = nullptr;
    lm_gguf_init_params ip = {false, &data};
    lm_gguf_context* g     = lm_gguf_init_from_file(argv[2], ip);
    if (!g) return 2;
    const std::string key = argv[4], value = argv[5];
    if (value == "true" || value == "false")
        lm_gguf_set_val_bool(g, key.c_str(), value == "true");
    else
        lm_gguf_set_val_str(g, key.c_str(), value.c_str());
    const bool ok = lm_gguf_write_to_file(g, argv[3], false);
    lm_gguf_free(g);
    lm_ggml_free(data);
    return ok ? 0 : 2;
}

static std::vector<llama_token> parse_ids(const char* p) {
    std::vector<llama_token> ids;
    while (*p) {
        ids.push_back((llama_token)std::strtol(p, nullptr, 10));
        p = std::strchr(p, ',');
        if (!p) break;
        ++p;
    }
    return ids;
}

static int cmd_dflash(int argc, char** argv) {
    if (argc < 9) return 1;
    llama_model* mt                    = load(argv[2]);
    llama_model* md                    = load(argv[3]);
    const std::vector<llama_token> ids = parse_ids(argv[4]);
    const llama_token last = (llama_token)std::atoi(argv[5]), mask = (llama_token)std::atoi(argv[7]);
    const int rows = std::atoi(argv[6]), n = (int)ids.size();
    if (n < 1 || rows < 1) return 1;
    llama_context* ct       = context(mt, 64 + n + rows, 1);
    llama_context* cd       = context(md, 64 + n + rows, 1, ct);
    const int32_t* layers   = llama_model_target_layer_ids(md);
    const uint32_t n_layers = llama_model_target_layer_ids_n(md);
    const int e_tgt = llama_model_n_embd(mt), e_dft = llama_model_n_embd(md);
    for (uint32_t k = 0; k < n_layers; ++k) llama_set_embeddings_layer_inp(ct, (uint32_t)layers[k], true);
    llama_set_embeddings_nextn(cd, true, true);
    llama_set_causal_attn(cd, false);

    std::vector<llama_token> ctx_ids = ids;
    if (llama_decode(ct, llama_batch_get_one(ctx_ids.data(), n)) != 0) {
        std::fprintf(stderr, "oracle: target decode failed\n");
        return 2;
    }
    // Each position's features: the layers' inputs side by side (common/speculative.cpp's order).
    std::vector<float> features((size_t)n * n_layers * e_tgt);
    for (uint32_t k = 0; k < n_layers; ++k) {
        const float* layer = llama_get_embeddings_layer_inp(ct, (uint32_t)layers[k]);
        for (int i = 0; i < n; ++i)
            std::memcpy(&features[((size_t)i * n_layers + k) * e_tgt], layer + (size_t)i * e_tgt,
                        (size_t)e_tgt * sizeof(float));
    }
    llama_batch enc = {n, nullptr, features.data(), nullptr, nullptr, nullptr, nullptr};
    if (llama_encode(cd, enc) != 0) {
        std::fprintf(stderr, "oracle: draft encode failed\n");
        return 2;
    }
    llama_batch inj = llama_batch_init(n, e_dft, 1);
    std::memcpy(inj.embd, llama_get_embeddings_nextn(cd), (size_t)n * e_dft * sizeof(float));
    for (int i = 0; i < n; ++i) {
        inj.pos[i]       = (llama_pos)i;
        inj.n_seq_id[i]  = 1;
        inj.seq_id[i][0] = 0;
        inj.logits[i]    = 0;
    }
    inj.n_tokens = n;
    if (llama_decode(cd, inj) != 0) {
        std::fprintf(stderr, "oracle: injection failed\n");
        return 2;
    }
    llama_batch blk = llama_batch_init(rows, 0, 1);
    for (int i = 0; i < rows; ++i) {
        blk.token[i]     = i == 0 ? last : mask;
        blk.pos[i]       = (llama_pos)(n + i);
        blk.n_seq_id[i]  = 1;
        blk.seq_id[i][0] = 0;
        blk.logits[i]    = 1;
    }
    blk.n_tokens = rows;
    if (llama_decode(cd, blk) != 0) {
        std::fprintf(stderr, "oracle: block decode failed\n");
        return 2;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(mt));
    FILE* out         = std::fopen(argv[8], "wb");
    if (!out) return 2;
    for (int i = 0; i < rows; ++i) std::fwrite(llama_get_logits_ith(cd, i), sizeof(float), n_vocab, out);
    std::fclose(out);
    if (argc > 9) {
        FILE* conf = std::fopen(argv[9], "wb");
        if (!conf) return 2;
        const float* c = llama_get_embeddings_nextn(cd);
        for (int i = 0; i < rows; ++i) std::fwrite(c + (size_t)i * e_dft, sizeof(float), 1, conf);
        std::fclose(conf);
    }
    std::printf("%d context positions, %d block rows x %d logits\n", n, rows, n_vocab);
    llama_batch_free(inj);
    llama_batch_free(blk);
    llama_free(cd);
    llama_free(ct);
    llama_model_free(md);
    llama_model_free(mt);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: oracle logits|tokenize|cases|chat|bench|quantize|set|dflash ...\n");
        return 1;
    }
    if (!std::getenv("ORACLE_VERBOSE")) {  // llama.cpp's log, for when a file does not load
        lm_ggml_log_set(quiet_log, nullptr);
        llama_log_set(quiet_log, nullptr);
    }
    llama_backend_init();
    const std::string cmd = argv[1];
    int rc                = 1;
    if (cmd == "logits")
        rc = cmd_logits(argc, argv);
    else if (cmd == "tokenize")
        rc = cmd_tokenize(argc, argv);
    else if (cmd == "cases")
        rc = cmd_cases(argc, argv);
    else if (cmd == "chat")
        rc = cmd_chat(argc, argv);
    else if (cmd == "bench")
        rc = cmd_bench(argc, argv);
    else if (cmd == "quantize")
        rc = cmd_quantize(argc, argv);
    else if (cmd == "set")
        rc = cmd_set(argc, argv);
    else if (cmd == "dflash")
        rc = cmd_dflash(argc, argv);
    if (rc == 1) std::fprintf(stderr, "oracle: bad arguments for %s\n", cmd.c_str());
    llama_backend_free();
    return rc;
}
