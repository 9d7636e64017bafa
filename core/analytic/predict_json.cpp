// JSON for PredictInput (strict: unknown keys and wrong types name their path) and PredictOutput.
#include "core/analytic/checks.h"
#include "core/analytic/predict.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <set>

namespace speculum::analytic {

// ---- strict reader ----

namespace {

using nlohmann::json;

// Reads one JSON object; every error names the path ("hardware.target.params_b"). The keys, the unknown-key check and
// the paths are core/json_reader.h's; errors are InvalidInput.
class Reader {
public:
    Reader(const json& j, const std::string& path) : m_json(checked(j, path)), m_r(j, path, &Reader::fail) {}
    // Call after reading: any key not read is unknown ("PATH: is not a known key").
    void finish() const { m_r.finish(); }
    bool has(const std::string& key) { return m_r.sub(intern(key)) != nullptr; }
    double num(const std::string& key, double def) {
        if (!has(key)) return def;
        if (!m_json[key].is_number()) fail(at(key), "must be a number");
        return m_json[key].get<double>();
    }
    int integer(const std::string& key, int def) {
        if (!has(key)) return def;
        const auto& v = m_json[key];
        if (!v.is_number_integer() && !(v.is_number() && v.get<double>() == std::floor(v.get<double>())))
            fail(at(key), "must be an integer");
        double d = v.get<double>();
        if (d < -1e9 || d > 1e9) fail(at(key), "is out of range");
        return int(d);
    }
    bool boolean(const std::string& key, bool def) {
        if (!has(key)) return def;
        if (!m_json[key].is_boolean()) fail(at(key), "must be true or false");
        return m_json[key].get<bool>();
    }
    std::string str(const std::string& key, const std::string& def) {
        if (!has(key)) return def;
        if (!m_json[key].is_string()) fail(at(key), "must be a string");
        return m_json[key].get<std::string>();
    }
    // A number or an array of numbers (scalar α or per-position α).
    std::vector<double> nums(const std::string& key, std::vector<double> def, bool allow_scalar) {
        if (!has(key)) return def;
        const auto& v = m_json[key];
        if (allow_scalar && v.is_number()) return {v.get<double>()};
        return array_of_numbers(v, at(key));
    }
    const json& sub(const std::string& key) {
        const json* v = m_r.sub(intern(key));
        if (!v) fail(at(key), "is missing");
        return *v;
    }
    std::string at(const std::string& key) const { return m_r.at(key); }

    static std::vector<double> array_of_numbers(const json& v, const std::string& path) {
        if (!v.is_array()) fail(path, "must be a number or an array of numbers");
        if (v.size() > 65536) fail(path, "is too long");
        std::vector<double> out;
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_number()) fail(path + "[" + std::to_string(i) + "]", "must be a number");
            out.push_back(v[i].get<double>());
        }
        return out;
    }
    [[noreturn]] static void fail(const std::string& path, const std::string& what) {
        throw InvalidInput(path + ": " + what);
    }

private:
    static const json& checked(const json& j, const std::string& path) {
        if (!j.is_object()) fail(path.empty() ? "input" : path, "must be a JSON object");
        return j;
    }
    // JsonReader keeps the keys it was asked for as views: the names live as long as the reader.
    const char* intern(const std::string& key) { return m_names.emplace(key).first->c_str(); }

    const json& m_json;
    std::set<std::string> m_names;
    JsonReader m_r;
};

template <class T, class Fn>
std::vector<T> read_array(Reader& r, const std::string& key, Fn&& read_one) {
    std::vector<T> out;
    if (!r.has(key)) return out;
    const json& arr = r.sub(key);
    if (!arr.is_array()) Reader::fail(r.at(key), "must be an array");
    if (arr.size() > 4096) Reader::fail(r.at(key), "is too long");
    for (size_t i = 0; i < arr.size(); ++i) out.push_back(read_one(arr[i], r.at(key) + "[" + std::to_string(i) + "]"));
    return out;
}

// ---- model specs ----

ModelSpec read_model(const json& j, const std::string& path, ModelSpec m) {
    Reader r(j, path);
    m.params_b        = r.num("params_b", m.params_b);
    m.weight_bits     = r.num("weight_bits", m.weight_bits);
    m.n_layers        = r.integer("n_layers", m.n_layers);
    m.d_model         = r.integer("d_model", m.d_model);
    m.kv_dim          = r.integer("kv_dim", m.kv_dim);
    m.kv_bits         = r.num("kv_bits", m.kv_bits);
    m.compute         = r.str("compute", m.compute);
    m.expert_params_b = r.num("expert_params_b", m.expert_params_b);
    m.n_expert        = r.integer("n_expert", m.n_expert);
    m.n_expert_used   = r.integer("n_expert_used", m.n_expert_used);
    m.state_mb        = r.num("state_mb", m.state_mb);
    m.state_input_kb  = r.num("state_input_kb", m.state_input_kb);
    m.rollback        = r.str("rollback", m.rollback);
    r.finish();
    return m;
}

json model_json(const ModelSpec& m) {
    json j = {{"params_b", m.params_b}, {"weight_bits", m.weight_bits}, {"n_layers", m.n_layers},
              {"d_model", m.d_model},   {"kv_dim", m.kv_dim},           {"kv_bits", m.kv_bits},
              {"compute", m.compute}};
    if (m.n_expert > 0)  // only for a mixture of experts: dense specs keep their JSON
        j["expert_params_b"] = m.expert_params_b, j["n_expert"] = m.n_expert, j["n_expert_used"] = m.n_expert_used;
    if (m.state_mb > 0)  // only for a hybrid
        j["state_mb"] = m.state_mb, j["state_input_kb"] = m.state_input_kb, j["rollback"] = m.rollback;
    return j;
}

json shape_json(const LayerShape& s) {
    return {{"d_model", s.d_model}, {"d_ffn", s.d_ffn}, {"kv_dim", s.kv_dim}, {"norms", s.norms}};
}

}  // namespace

// ---- reading PredictInput ----

PredictInput predict_input_from_json(const json& j,
                                     const std::function<hw::HardwareProfile(const std::string&)>& resolve) {
    PredictInput in;
    Reader r(j, "");
    in.alpha      = r.nums("alpha", in.alpha, true);
    in.k          = r.integer("k", in.k);
    in.c          = r.num("c", in.c);
    in.k_max      = r.integer("k_max", in.k_max);
    in.block      = r.integer("block", in.block);
    in.cascade    = read_array<DraftLevel>(r, "cascade", [](const json& e, const std::string& p) {
        Reader l(e, p);
        DraftLevel d;
        d.alpha = l.nums("alpha", d.alpha, true);
        d.c     = l.num("c", d.c);
        d.steps = l.integer("steps", d.steps);
        if (l.boolean("max_gram", false)) {  // Max-Gram bottom: zero cost, a block of 10 unless steps is given
            d.c = 0;
            if (!e.contains("steps")) d.steps = kMaxGramBlock;
        }
        l.finish();
        return d;
    });
    in.horizontal = read_array<HorizontalSegment>(r, "horizontal", [](const json& e, const std::string& p) {
        Reader l(e, p);
        HorizontalSegment s;
        s.alpha = l.num("alpha", s.alpha);
        s.c     = l.num("c", s.c);
        s.count = l.integer("count", s.count);
        l.finish();
        return s;
    });
    if (r.has("kmatrix")) in.kmatrix = kmatrix_from_json(r.sub("kmatrix"));
    if (r.has("tree")) {
        Reader t(r.sub("tree"), "tree");
        TreeInput ti;
        if (t.has("p")) {
            const json& p = t.sub("p");
            if (!p.is_array() || p.empty()) Reader::fail("tree.p", "must be a non-empty array (of per-rank rows)");
            ti.p.clear();
            if (p[0].is_number())
                ti.p.push_back(Reader::array_of_numbers(p, "tree.p"));  // Sequoia's single vector
            else
                for (size_t d = 0; d < p.size(); ++d)
                    ti.p.push_back(Reader::array_of_numbers(p[d], "tree.p[" + std::to_string(d) + "]"));
        }
        if (t.has("parents")) {
            for (double v : Reader::array_of_numbers(t.sub("parents"), "tree.parents")) {
                if (v != std::floor(v) || std::abs(v) > 1e6) Reader::fail("tree.parents", "must hold integers");
                ti.parents.push_back(int(v));
            }
            if (ti.parents.empty()) Reader::fail("tree.parents", "is empty: a tree needs at least its root (-1)");
        }
        ti.budget    = t.integer("budget", ti.budget);
        ti.max_depth = t.integer("max_depth", ti.max_depth);
        t.finish();
        in.tree = ti;
    }
    in.mlspecqd = read_array<QdLevel>(r, "mlspecqd", [](const json& e, const std::string& p) {
        Reader l(e, p);
        QdLevel q;
        q.alpha = l.num("alpha", q.alpha);
        q.n     = l.integer("n", q.n);
        q.s     = l.num("s", q.s);
        l.finish();
        return q;
    });
    if (r.has("cats")) {
        Reader c(r.sub("cats"), "cats");
        CatsInput ci;
        ci.config.l_total = c.integer("l_total", ci.config.l_total);
        ci.config.l_dm    = c.integer("l_dm", ci.config.l_dm);
        ci.config.l_sv    = c.integer("l_sv", ci.config.l_sv);
        ci.config.gamma   = c.integer("gamma", ci.config.gamma);
        ci.config.bits    = c.num("bits", ci.config.bits);
        ci.mean_accepted  = c.num("mean_accepted", 0);
        if (c.has("layer")) {
            Reader s(c.sub("layer"), "cats.layer");
            ci.config.shape.d_model = s.integer("d_model", int(ci.config.shape.d_model));
            ci.config.shape.d_ffn   = s.integer("d_ffn", int(ci.config.shape.d_ffn));
            ci.config.shape.kv_dim  = s.integer("kv_dim", int(ci.config.shape.kv_dim));
            ci.config.shape.norms   = s.boolean("norms", ci.config.shape.norms);
            s.finish();
        }
        c.finish();
        in.cats = ci;
    }
    if (r.has("cassandra")) {
        Reader c(r.sub("cassandra"), "cassandra");
        CassandraInput ci;
        auto& k       = ci.config;
        k.w_p         = c.num("w_p", k.w_p);
        k.kv_p        = c.num("kv_p", k.kv_p);
        k.w_t         = c.integer("w_t", k.w_t);
        k.kv_t        = c.integer("kv_t", k.kv_t);
        ci.bits_given = c.has("bits");
        k.bits        = c.num("bits", k.bits);
        k.s_w         = c.num("s_w", k.s_w);
        k.s_kv        = c.num("s_kv", k.s_kv);
        k.exp_bits    = c.num("exp_bits", k.exp_bits);
        k.map_bits    = c.num("map_bits", k.map_bits);
        ci.alpha      = c.num("alpha", -1);
        c.finish();
        in.cassandra = ci;
    }
    if (r.has("ghidorah")) {
        Reader g(r.sub("ghidorah"), "ghidorah");
        GhidorahInput gi;
        gi.dataset      = g.str("dataset", gi.dataset);
        gi.root_counted = g.boolean("root_counted", gi.root_counted);
        if (g.has("soc")) {
            // Units in the JSON: TFLOP/s, GB/s, milliseconds.
            Reader h(g.sub("soc"), "ghidorah.soc");
            HeteroSoc soc;
            auto unit = [&](const char* key, ProcessingUnit& u) {
                Reader pu(h.sub(key), std::string("ghidorah.soc.") + key);
                u.name  = pu.str("name", key);
                u.flops = pu.num("tflops", 0) * 1e12;
                u.bw    = pu.num("bw_gbps", 0) * 1e9;
                pu.finish();
            };
            if (!h.has("gpu") || !h.has("cpu")) Reader::fail("ghidorah.soc", "needs \"gpu\" and \"cpu\" units");
            unit("gpu", soc.gpu);
            unit("cpu", soc.cpu);
            soc.dram_bw        = h.num("dram_bw_gbps", 0) * 1e9;
            soc.sync_s         = h.num("sync_ms", soc.sync_s * 1e3) * 1e-3;
            soc.syncs_per_pass = h.integer("syncs_per_pass", soc.syncs_per_pass);
            h.finish();
            gi.soc = soc;
        }
        if (g.has("workload")) {
            Reader wl(g.sub("workload"), "ghidorah.workload");
            HeteroWorkload w;
            w.weight_bytes    = wl.num("weight_gb", 0) * 1e9;
            w.flops_per_token = wl.num("gflops_per_token", 0) * 1e9;
            wl.finish();
            gi.workload = w;
        }
        g.finish();
        in.ghidorah = gi;
    }
    if (r.has("hardware")) {
        Reader h(r.sub("hardware"), "hardware");
        HardwareInput hi;
        if (!h.has("profile"))
            Reader::fail("hardware.profile", "missing (a bundled id such as \"rtx4090\" or an object)");
        const json& p = h.sub("profile");
        if (p.is_string()) {
            hi.profile_id = p.get<std::string>();
            if (!resolve) Reader::fail("hardware.profile", "profile ids cannot be resolved here; give an object");
            hi.profile = resolve(hi.profile_id);
        } else if (p.is_object()) {
            try {
                hw::from_json(p, hi.profile);
                if (hi.profile.id.empty()) hi.profile.id = "inline";
            } catch (const std::exception& e) {
                Reader::fail("hardware.profile", e.what());
            }
            hi.profile_id = hi.profile.id;
        } else {
            Reader::fail("hardware.profile", "must be a profile id string or a profile object");
        }
        if (h.has("target")) hi.target = read_model(h.sub("target"), "hardware.target", hi.target);
        if (h.has("draft")) hi.draft = read_model(h.sub("draft"), "hardware.draft", hi.draft);
        hi.context          = h.integer("context", hi.context);
        hi.memory_budget_gb = h.num("memory_budget_gb", hi.memory_budget_gb);
        h.finish();
        in.hardware = hi;
    }
    r.finish();
    validate(in);
    return in;
}

// ---- writing PredictInput ----

void to_json(json& j, const PredictInput& in) {
    j = {{"alpha", in.alpha}, {"k", in.k}, {"c", in.c}, {"k_max", in.k_max}};
    if (in.block > 0) j["block"] = in.block;
    for (const auto& l : in.cascade) j["cascade"].push_back({{"alpha", l.alpha}, {"c", l.c}, {"steps", l.steps}});
    for (const auto& s : in.horizontal) j["horizontal"].push_back({{"alpha", s.alpha}, {"c", s.c}, {"count", s.count}});
    if (in.kmatrix) to_json(j["kmatrix"], *in.kmatrix);
    if (in.tree) {
        j["tree"] = {{"p", in.tree->p}, {"budget", in.tree->budget}, {"max_depth", in.tree->max_depth}};
        if (!in.tree->parents.empty()) j["tree"]["parents"] = in.tree->parents;
    }
    for (const auto& q : in.mlspecqd) j["mlspecqd"].push_back({{"alpha", q.alpha}, {"n", q.n}, {"s", q.s}});
    if (in.cats) {
        const auto& c = in.cats->config;
        j["cats"]     = {{"l_total", c.l_total},
                         {"l_dm", c.l_dm},
                         {"l_sv", c.l_sv},
                         {"gamma", c.gamma},
                         {"bits", c.bits},
                         {"layer", shape_json(c.shape)},
                         {"mean_accepted", in.cats->mean_accepted}};
    }
    if (in.cassandra) {
        const auto& c  = in.cassandra->config;
        j["cassandra"] = {{"w_p", c.w_p},           {"kv_p", c.kv_p},
                          {"w_t", c.w_t},           {"kv_t", c.kv_t},
                          {"bits", c.bits},         {"s_w", c.s_w},
                          {"s_kv", c.s_kv},         {"exp_bits", c.exp_bits},
                          {"map_bits", c.map_bits}, {"alpha", in.cassandra->alpha}};
        if (!in.cassandra->bits_given) j["cassandra"].erase("bits");  // B then follows the hardware target
    }
    if (in.ghidorah) {
        j["ghidorah"] = {{"dataset", in.ghidorah->dataset}, {"root_counted", in.ghidorah->root_counted}};
        if (const auto& soc = in.ghidorah->soc) {
            auto unit = [](const ProcessingUnit& u) {
                return json{{"name", u.name}, {"tflops", u.flops / 1e12}, {"bw_gbps", u.bw / 1e9}};
            };
            j["ghidorah"]["soc"] = {{"gpu", unit(soc->gpu)},
                                    {"cpu", unit(soc->cpu)},
                                    {"dram_bw_gbps", soc->dram_bw / 1e9},
                                    {"sync_ms", soc->sync_s * 1e3},
                                    {"syncs_per_pass", soc->syncs_per_pass}};
        }
        if (const auto& w = in.ghidorah->workload)
            j["ghidorah"]["workload"] = {{"weight_gb", w->weight_bytes / 1e9},
                                         {"gflops_per_token", w->flops_per_token / 1e9}};
    }
    if (in.hardware) {
        json p;
        hw::to_json(p, in.hardware->profile);
        j["hardware"] = {{"profile", p},
                         {"target", model_json(in.hardware->target)},
                         {"draft", model_json(in.hardware->draft)},
                         {"context", in.hardware->context},
                         {"memory_budget_gb", in.hardware->memory_budget_gb}};
    }
}

// ---- writing PredictOutput ----

namespace {
constexpr const char* kLengthsFixedSteps =
    "fixed steps: each intermediate level runs n speculative steps per call (Thm. 4.3), neither the engine's "
    "truncate nor its threshold lengths";
constexpr const char* kLengthsFixedSegments =
    "fixed segments: each segment drafts exactly its k (Thm. 4.5): the engine's truncate mode with leaves that "
    "fill their segment";
constexpr const char* kLengthsFixedPerLevel =
    "fixed per level: every level drafts N tokens per step (Eq. 1 per level): the engine's truncate mode without "
    "the shortened last steps";
}  // namespace

void to_json(json& j, const PredictOutput& o) {
    j = {{"label", "modeled: closed forms of the papers' processes, not measurements"},
         {"position_acceptance", o.position_acceptance},
         {"expected_tokens", o.expected_tokens},
         {"ewif", o.ewif},
         {"best_k", o.best_k},
         {"best_ewif", o.best_ewif},
         {"predicted_speedup", o.predicted_speedup}};
    // Which draft-length semantics each cascade model assumes (docs/analytic.md, "Length semantics"), so that a
    // comparison with a measured run pairs like with like (spec.length_mode).
    if (o.cascade)
        j["cascade"] = {{"expected_tokens", o.cascade->expected_tokens},
                        {"cost", o.cascade->cost},
                        {"ewif", o.cascade->ewif},
                        {"length_semantics", kLengthsFixedSteps}};
    if (o.horizontal_ewif)
        j["horizontal"] = {{"ewif", *o.horizontal_ewif},
                           {"gradient", o.horizontal_gradient},
                           {"length_semantics", kLengthsFixedSegments}};
    if (o.kmatrix) to_json(j["kmatrix"], *o.kmatrix);  // its length_semantics is its mode
    if (o.tree_expected_length) j["tree"]["expected_length"] = *o.tree_expected_length;
    if (o.sequoia)
        j["tree"]["sequoia"] = {{"expected_length", o.sequoia->expected_length},
                                {"parents", o.sequoia->tree.parent},
                                {"best_by_budget", o.sequoia->best_by_budget}};
    if (o.mlspecqd)
        j["mlspecqd"] = {{"speedup", o.mlspecqd->speedup},
                         {"effective_speed", o.mlspecqd->effective_speed},
                         {"length_semantics", kLengthsFixedPerLevel}};
    json bpt;
    if (o.bpt_autoregressive_gb > 0) bpt["autoregressive_gb"] = o.bpt_autoregressive_gb;
    if (o.bpt_chain_gb > 0) bpt["chain_gb"] = o.bpt_chain_gb;
    if (o.cats_bpt)
        bpt["cats"] = {{"bpt_gb", o.cats_bpt->bpt},
                       {"draft_gb", o.cats_bpt->draft_gb},
                       {"sv_gb", o.cats_bpt->sv_gb},
                       {"target_gb", o.cats_bpt->target_gb}};
    if (!bpt.empty()) j["bpt"] = bpt;
    if (o.cassandra_j) {
        const auto& b  = *o.cassandra_bits;
        j["cassandra"] = {{"j", *o.cassandra_j},
                          {"draft_bits_per_weight", b.draft_bits_per_weight},
                          {"full_bits_per_weight", b.full_bits_per_weight},
                          {"eq2_bits_per_weight", b.eq2_bits_per_weight},
                          {"draft_bits_per_kv", b.draft_bits_per_kv},
                          {"full_bits_per_kv", b.full_bits_per_kv},
                          {"draft_cost_ratio", b.draft_cost_ratio},
                          {"verify_cost_ratio", b.verify_cost_ratio}};
    }
    if (o.ghidorah)
        j["ghidorah"] = {{"widths", o.ghidorah->widths},         {"tau", o.ghidorah->tau},
                         {"step_time_s", o.ghidorah->step_time}, {"speedup", o.ghidorah->speedup},
                         {"best_width", o.ghidorah->best_width}, {"best_speedup", o.ghidorah->best_speedup},
                         {"step_model", o.ghidorah_step_model}};
    if (o.timing)
        j["hardware"] = {{"t_autoregressive_s", o.timing->t_autoregressive},
                         {"t_verify_s", o.timing->t_verify},
                         {"t_draft_s", o.timing->t_draft},
                         {"c", o.timing->c},
                         {"t_cycle_s", o.timing->t_cycle},
                         {"tokens_per_s", o.timing->tokens_per_s},
                         {"speedup", o.timing->speedup}};
    if (o.memory)
        j["memory"] = {
            {"budget_gb", o.memory->budget_gb},
            {"weights_gb", o.memory->weights_gb},
            {"kv_gb", o.memory->kv_gb},
            {"fits", o.memory->fits},
            {"streamed_gb", o.memory->streamed_gb},
            {"stream_time_s", std::isfinite(o.memory->stream_time_s) ? json(o.memory->stream_time_s) : json("inf")},
            {"kv_capacity_tokens", o.memory->kv_capacity_tokens}};
}

}  // namespace speculum::analytic
