// Gaussian-process regression for Bayesian optimisation of sweeps: a stationary kernel (RBF or Matern 5/2) over
// points in normalised coordinates, hyperparameters chosen by a small grid on the log marginal likelihood, a hand
// Cholesky (meant for n <= a few hundred points), and expected improvement. Pure numerics: no randomness, no I/O.
#pragma once

#include <cstddef>
#include <vector>

namespace speculum::sweep {

enum class GpKernel { rbf, matern52 };

struct GpHyper {
    double length_scale = 0.3;   // kernel length scale, in normalised coordinates (a numeric axis spans [0, 1])
    double noise_ratio  = 1e-6;  // observation noise variance / signal variance (dimensionless)
    double signal_var   = 1;     // signal variance of the standardised targets (profiled in closed form)
    double log_ml       = 0;     // log marginal likelihood of the standardised targets at these values
};

// The hyperparameter grid fit() searches (length scales x noise ratios).
const std::vector<double>& gp_length_scale_grid();
const std::vector<double>& gp_noise_ratio_grid();

// Kernel correlation (unit variance) at squared distance r2.
double gp_correlation(GpKernel kernel, double length_scale, double r2);

// In-place Cholesky of a symmetric positive definite n x n matrix (row-major; only the lower triangle is read):
// on success the lower triangle holds L with A = L L^T (the upper triangle is zeroed). False if A is not
// positive definite (to working precision).
bool cholesky(std::vector<double>& a, size_t n);

class GaussianProcess {
public:
    GaussianProcess(GpKernel kernel, size_t dims);

    // Fits to n points x (n x dims, row-major) with targets y (n), standardised internally. The first form picks
    // the hyperparameters from the grid by marginal likelihood; the second keeps the given ones (re-profiling the
    // signal variance). Throws std::invalid_argument on empty or mismatched input, std::runtime_error when no
    // grid point gives a positive definite kernel matrix.
    void fit(const std::vector<double>& x, const std::vector<double>& y);
    void fit(const std::vector<double>& x, const std::vector<double>& y, const GpHyper& hyper);

    struct Prediction {
        double mean = 0;  // posterior mean of the latent function, in the units of y
        double sd   = 0;  // posterior standard deviation of the latent function (noise excluded), units of y
    };
    Prediction predict(const double* x) const;  // x: dims coordinates

    const GpHyper& hyper() const { return m_hyper; }
    size_t size() const { return m_n; }
    size_t dims() const { return m_dims; }

private:
    // Cholesky of C + g I and alpha for the current targets; false if not positive definite.
    bool factor(double length_scale, double noise_ratio);

    GpKernel m_kernel;
    size_t m_dims = 0;
    size_t m_n    = 0;
    std::vector<double> m_x;  // n x dims
    std::vector<double> m_y;  // standardised targets (n)
    double m_y_mean = 0;      // standardisation of the targets
    double m_y_sd   = 1;
    std::vector<double> m_chol;   // n x n lower factor of C + g I
    std::vector<double> m_alpha;  // (C + g I)^-1 y, n
    GpHyper m_hyper;
};

// Expected improvement over `best` for maximisation, with exploration margin xi (same units as mean):
// E[max(0, f - best - xi)] for f ~ N(mean, sd^2). sd = 0 gives max(0, mean - best - xi).
double expected_improvement(double mean, double sd, double best, double xi);

}  // namespace speculum::sweep
