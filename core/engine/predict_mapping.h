// SpecConfig -> PredictInput: the one mapping from a configuration the engine runs to the analytic models' input,
// given the figures (acceptance, cost) each draft level is assumed or measured to have. The app's live "modeled"
// panels and the export manifest's predicted figures both use it, so a configuration means the same thing to the
// engine and to the models. What the models cannot express is listed in `not_modeled`, one line each naming the
// field; nothing is guessed.
#pragma once

#include "core/analytic/predict.h"
#include "core/engine/spec_config.h"

#include <string>
#include <vector>

namespace speculum::engine {

struct LevelFigures {
    std::vector<double> alpha{0.8};  // acceptance of this level's tokens by the level above: one value or per position
    double c                                   = 0.05;  // one call of this level ÷ one target call
    bool operator==(const LevelFigures&) const = default;
};

struct ModelFigures {
    std::vector<LevelFigures> levels;     // [i]: draft level i + 1; levels without figures are not modeled
    std::vector<double> rank_acceptance;  // trees: P(a sibling of rank r is accepted); empty = unknown, and a tree
                                          // is then modeled as the chain of gamma[0]
    bool operator==(const ModelFigures&) const = default;
};

struct ModeledConfig {
    analytic::PredictInput input;  // alpha, k, c; cascade and its K-matrix; tree (no hardware: the caller adds it)
    // The verification tree the engine expands, root first (TokenTree form), when its shape is fixed: a chain, a
    // static or top-k tree, a chain with second choices. Empty (root only) for Sequoia, whose tree predict() picks.
    analytic::TokenTree tree;
    analytic::AcceptanceTable rank_table;  // p[depth][rank] the tree figures use (a chain: α per position)
    std::vector<std::string> not_modeled;  // "p_min: drafts cut short by p_min are not modeled", ...
};

// Throws std::invalid_argument when level 1 has no figures, or the tree shape cannot be built (naming the field).
// A vertical cascade is modeled twice, as predict() takes it: Thm. 4.3's fixed-steps process (input.cascade) and
// the engine's own truncate lengths (input.kmatrix).
ModeledConfig predict_input_of(const SpecConfig& s, const ModelFigures& f);

}  // namespace speculum::engine
