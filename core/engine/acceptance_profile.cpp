// speculation_profile.json and the synthetic-acceptance exports (see acceptance_profile.h).
#include "core/engine/acceptance_profile.h"

#include "core/file_io.h"
#include "core/json_input.h"
#include "core/json_reader.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace speculum::engine {

namespace {

std::vector<double> product_of(const std::vector<double>& conditional) {
    std::vector<double> m;
    double reach = 1.0;
    for (double c : conditional) m.push_back(reach *= c);
    return m;
}

std::vector<double> conditional_of(const std::vector<double>& marginal) {
    std::vector<double> c;
    double prev = 1.0;
    for (double m : marginal) {
        c.push_back(prev > 0 ? m / prev : 0.0);
        prev = m;
    }
    return c;
}

}  // namespace

void AcceptanceProfile::validate() const {
    auto bad = [](const std::string& field, const std::string& why) { throw_json_error("profile." + field, why); };
    if (conditional.size() != marginal.size())
        bad("marginal_accept_rates", "must have as many positions as conditional_accept_rates");
    if (conditional.size() > 4096) bad("conditional_accept_rates", "more than 4096 positions");
    const std::vector<double> m = product_of(conditional);
    for (size_t i = 0; i < conditional.size(); ++i) {
        const std::string at = "[" + std::to_string(i) + "]";
        if (!(conditional[i] >= 0 && conditional[i] <= 1)) bad("conditional_accept_rates" + at, "must be in [0, 1]");
        if (!(marginal[i] >= 0 && marginal[i] <= 1)) bad("marginal_accept_rates" + at, "must be in [0, 1]");
        if (std::fabs(marginal[i] - m[i]) > 1e-6)
            bad("marginal_accept_rates" + at, "is not the product of the conditional rates up to it");
    }
    if (!(mean_accept_length >= 1.0) || !std::isfinite(mean_accept_length))
        bad("mean_accept_length", "must be >= 1 (it counts the target's own token)");
    for (size_t i = 0; i < histogram.size(); ++i)
        if (histogram[i] < 0) bad("acceptance_length_histogram[" + std::to_string(i) + "]", "must be >= 0");
    if (n_steps < 0 || n_drafted < 0) bad("num_steps", "counts must be >= 0");
}

AcceptanceProfile acceptance_profile(const RunStats& s, MeasurementConditions conditions) {
    AcceptanceProfile p;
    p.conditional        = s.alpha();
    p.marginal           = product_of(p.conditional);
    p.mean_accept_length = s.n_steps > 0 ? std::max(1.0, s.mean_accepted_length()) : 1.0;
    p.histogram          = s.accepted_len_hist;
    p.n_steps            = s.n_steps;
    p.n_drafted          = s.n_drafted;
    p.conditions         = std::move(conditions);
    return p;
}

void to_json(nlohmann::json& j, const AcceptanceProfile& p) {
    const MeasurementConditions& c = p.conditions;
    j                              = {{"version", kAcceptanceProfileVersion},
                                      {"conditional_accept_rates", p.conditional},
                                      {"marginal_accept_rates", p.marginal},
                                      {"mean_accept_length", p.mean_accept_length},
                                      {"acceptance_length_histogram", p.histogram},
                                      {"num_steps", p.n_steps},
                                      {"num_drafted", p.n_drafted},
                                      {"measurement_conditions",
                                       {{"dataset", c.dataset},
                                        {"osl", c.osl},
                                        {"num_samples", c.num_samples},
                                        {"target", c.target},
                                        {"drafter", c.drafter},
                                        {"num_speculative_tokens", c.num_speculative_tokens},
                                        {"temperature", c.temperature},
                                        {"tool", c.tool}}}};
}

void from_json(const nlohmann::json& j, AcceptanceProfile& p) {
    JsonReader r(j, "profile");
    p               = AcceptanceProfile{};
    int32_t version = kAcceptanceProfileVersion;
    r.get("version", version, 1, kAcceptanceProfileVersion);
    r.get("conditional_accept_rates", p.conditional);
    r.get("marginal_accept_rates", p.marginal);
    if (!r.has("conditional_accept_rates") && !r.has("marginal_accept_rates"))
        r.fail(r.at("conditional_accept_rates"), "missing (a profile needs conditional or marginal rates)");
    if (!r.has("marginal_accept_rates")) p.marginal = product_of(p.conditional);
    if (!r.has("conditional_accept_rates")) p.conditional = conditional_of(p.marginal);
    r.get("mean_accept_length", p.mean_accept_length);
    if (!r.has("mean_accept_length")) {  // the chain's expectation under the rates
        p.mean_accept_length = 1.0;
        for (double m : p.marginal) p.mean_accept_length += m;
    }
    r.get("acceptance_length_histogram", p.histogram, 0, INT64_MAX);
    r.get("num_steps", p.n_steps, 0, INT64_MAX);
    r.get("num_drafted", p.n_drafted, 0, INT64_MAX);
    if (const nlohmann::json* mc = r.sub("measurement_conditions")) {
        JsonReader c(*mc, r.at("measurement_conditions"));
        MeasurementConditions& m = p.conditions;
        c.get("dataset", m.dataset), c.get("osl", m.osl, 0, INT32_MAX),
            c.get("num_samples", m.num_samples, 0, INT32_MAX);
        c.get("target", m.target), c.get("drafter", m.drafter);
        c.get("num_speculative_tokens", m.num_speculative_tokens, 0, 4096);
        c.get("temperature", m.temperature, 0.0, 100.0), c.get("tool", m.tool);
        c.finish();
    }
    r.finish();
    p.validate();
}

AcceptanceProfile load_acceptance_profile(const std::string& path) {
    try {
        const std::string text = read_input_file(path, 1 << 20, "acceptance profile");
        return parse_json(text, path).get<AcceptanceProfile>();
    } catch (const std::exception& e) {
        const std::string what = e.what();
        throw std::invalid_argument(what.rfind(path, 0) == 0 ? what : path + ": " + what);
    }
}

std::string llama_cpp_synth_rates(const AcceptanceProfile& p) {
    std::string out;
    for (size_t i = 0; i < p.marginal.size(); ++i) {
        char v[16];
        std::snprintf(v, sizeof v, "%.3f", p.marginal[i]);
        if (i > 0 && std::string(v) == "0.000") break;
        out += (out.empty() ? "" : ",") + std::string(v);
    }
    return out.empty() ? "" : "--spec-synth-rates " + out;
}

nlohmann::json vllm_synthetic_config(const AcceptanceProfile& p) {
    return {{"rejection_sample_method", "synthetic"},
            {"synthetic_acceptance_rates", p.marginal},
            {"num_speculative_tokens", int(p.marginal.size())}};
}

}  // namespace speculum::engine
