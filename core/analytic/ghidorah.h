// Ghidorah (paper 003) verification-width choice: w* = argmax τ(w) / T_step(w) over widths 1–64, with τ from its
// Table I (acceptance length per width, Vicuna-7B + Medusa, trees calibrated on MT-bench) or from any tree model.
// Whether the width counts the root token is a parameter (Table I's width 1 → τ = 1 suggests it does).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace speculum::analytic {

struct WidthTable {
    std::vector<int> widths;  // verification widths
    std::vector<double> tau;  // acceptance length (tokens per step) at each width
};

// Ghidorah Table I, reconstructed (paper note §5.1): dataset is "MT-bench", "GSM8K", "MBPP" or "Human-eval".
WidthTable ghidorah_table1(const std::string& dataset);
std::vector<std::string> ghidorah_datasets();

struct WidthChoice {
    std::vector<int> widths;
    std::vector<double> tau;
    std::vector<double> step_time;  // seconds per verification step at each width
    std::vector<double> speedup;    // τ(w) · t_seq / T_step(w)
    int best_width      = 1;
    double best_speedup = 1;
};

// step_time(n_tokens) gives the time of one verification forward over n tokens; n = w if the width counts the
// root, else w + 1. t_seq is the time of one sequential (one-token) step. Ties go to the smaller width.
WidthChoice choose_width(const WidthTable& table, const std::function<double(int)>& step_time, double t_seq,
                         bool root_counted = true);

}  // namespace speculum::analytic
