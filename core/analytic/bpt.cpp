// Bytes Per Token for chain, tree and cascade configurations (see bpt.h).
#include "core/analytic/bpt.h"

#include "core/analytic/checks.h"

#include <string>

namespace speculum::analytic {

int64_t decoder_layer_params(const LayerShape& s) {
    if (s.d_model <= 0 || s.d_ffn <= 0 || s.kv_dim <= 0 || s.d_model > (1 << 20) || s.d_ffn > (1 << 22) ||
        s.kv_dim > (1 << 20))
        throw InvalidInput("layer shape: d_model, d_ffn and kv_dim must be positive and plausible");
    return 2 * s.d_model * s.d_model + 2 * s.d_model * s.kv_dim + 3 * s.d_model * s.d_ffn +
           (s.norms ? 2 * s.d_model : 0);
}

double layer_gb(const LayerShape& shape, double bits) {
    require_positive(bits, "bits");
    return double(decoder_layer_params(shape)) * bits / 8.0 / 1e9;
}

double bpt_two_stage(int gamma, double b_draft_gb, double b_verify_gb, double mean_accepted) {
    require_count(gamma, 0, 4096, "gamma");
    require_nonnegative(b_draft_gb, "b_draft");
    require_nonnegative(b_verify_gb, "b_verify");
    if (!(mean_accepted >= 1.0)) throw InvalidInput("mean_accepted must be >= 1 (it counts the bonus token)");
    return (gamma * b_draft_gb + b_verify_gb) / mean_accepted;
}

double bpt_cats(int gamma, double b_draft_gb, double b_sv_gb, double b_target_gb, double mean_accepted) {
    require_nonnegative(b_sv_gb, "b_sv");
    require_nonnegative(b_target_gb, "b_target");
    return bpt_two_stage(gamma, b_draft_gb, b_sv_gb + b_target_gb, mean_accepted);
}

void validate(const CatsConfig& c) {
    require_count(c.l_total, 2, 1024, "cats.l_total");
    require_count(c.l_dm, 1, c.l_total - 1, "cats.l_dm");
    require_count(c.l_sv, c.l_dm, c.l_total, "cats.l_sv");
    require_count(c.gamma, 1, 4096, "cats.gamma");
    require_positive(c.bits, "cats.bits");
    decoder_layer_params(c.shape);
}

BptBreakdown bpt_cats(const CatsConfig& c, double mean_accepted) {
    validate(c);
    double layer = layer_gb(c.shape, c.bits);
    BptBreakdown b;
    b.draft_gb  = c.gamma * c.l_dm * layer;
    b.sv_gb     = (c.l_sv - c.l_dm) * layer;
    b.target_gb = (c.l_total - c.l_sv) * layer;
    b.bpt       = bpt_cats(c.gamma, c.l_dm * layer, b.sv_gb, b.target_gb, mean_accepted);
    return b;
}

double bpt_autoregressive(const CatsConfig& c) {
    validate(c);
    return c.l_total * layer_gb(c.shape, c.bits);
}

double bpt_tree(int tree_depth, double b_draft_gb, double b_verify_gb, double expected_length) {
    return bpt_two_stage(tree_depth, b_draft_gb, b_verify_gb, expected_length);
}

double bpt_cascade(const std::vector<DraftLevel>& levels, const std::vector<double>& level_gb, double target_gb) {
    if (levels.size() != level_gb.size())
        throw InvalidInput("bpt: " + std::to_string(levels.size()) + " cascade levels but " +
                           std::to_string(level_gb.size()) + " level sizes");
    require_nonnegative(target_gb, "bpt.target_gb");
    CascadeResult r = vertical_cascade(levels);  // validates the levels
    double bytes = target_gb, calls = 1.0;
    for (size_t j = 0; j < levels.size(); ++j) {
        require_nonnegative(level_gb[j], "bpt.level_gb[" + std::to_string(j) + "]");
        calls *= levels[j].steps;  // reviewer: n_j calls per parent call; bottom: k calls per reviewer step
        bytes += level_gb[j] * calls;
    }
    return bytes / r.expected_tokens;
}

}  // namespace speculum::analytic
