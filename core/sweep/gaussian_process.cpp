// Gaussian-process regression and expected improvement (see gaussian_process.h). The signal variance is profiled
// out of the marginal likelihood in closed form, so the grid only spans length scale x noise ratio.
#include "core/sweep/gaussian_process.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace speculum::sweep {

const std::vector<double>& gp_length_scale_grid() {
    // From "every grid step is unrelated" to "smooth across the whole space" (a numeric axis spans [0, 1]).
    static const std::vector<double> grid = {0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 2.0};
    return grid;
}

const std::vector<double>& gp_noise_ratio_grid() {
    // Deterministic objectives (analytic) sit at the bottom; measured speedups need room for timing noise.
    static const std::vector<double> grid = {1e-6, 1e-4, 1e-2, 1e-1};
    return grid;
}

double gp_correlation(GpKernel kernel, double length_scale, double r2) {
    if (kernel == GpKernel::rbf) return std::exp(-0.5 * r2 / (length_scale * length_scale));
    double r = std::sqrt(5.0 * r2) / length_scale;  // sqrt(5) * distance / length scale
    return (1.0 + r + r * r / 3.0) * std::exp(-r);
}

bool cholesky(std::vector<double>& a, size_t n) {
    for (size_t j = 0; j < n; ++j) {
        double d = a[j * n + j];
        for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0) || !std::isfinite(d)) return false;
        d            = std::sqrt(d);
        a[j * n + j] = d;
        for (size_t i = j + 1; i < n; ++i) {
            double s = a[i * n + j];
            for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / d;
        }
        for (size_t i = 0; i < j; ++i) a[i * n + j] = 0;  // upper triangle
    }
    return true;
}

namespace {

double squared_distance(const double* a, const double* b, size_t dims) {
    double r2 = 0;
    for (size_t k = 0; k < dims; ++k) r2 += (a[k] - b[k]) * (a[k] - b[k]);
    return r2;
}

// Solves L v = b in place (L lower triangular, n x n row-major).
void forward_solve(const std::vector<double>& l, size_t n, double* b) {
    for (size_t i = 0; i < n; ++i) {
        double s = b[i];
        for (size_t k = 0; k < i; ++k) s -= l[i * n + k] * b[k];
        b[i] = s / l[i * n + i];
    }
}

// Solves L^T v = b in place.
void backward_solve(const std::vector<double>& l, size_t n, double* b) {
    for (size_t i = n; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
        b[i] = s / l[i * n + i];
    }
}

}  // namespace

GaussianProcess::GaussianProcess(GpKernel kernel, size_t dims) : m_kernel(kernel), m_dims(dims) {}

bool GaussianProcess::factor(double length_scale, double noise_ratio) {
    const size_t n = m_n;
    m_chol.assign(n * n, 0.0);
    for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < i; ++j)
            m_chol[i * n + j] =
                gp_correlation(m_kernel, length_scale, squared_distance(&m_x[i * m_dims], &m_x[j * m_dims], m_dims));
        m_chol[i * n + i] = 1.0 + noise_ratio;
    }
    if (!cholesky(m_chol, n)) return false;
    m_alpha = m_y;
    forward_solve(m_chol, n, m_alpha.data());
    double quad = 0;  // y^T (C + g I)^-1 y = |L^-1 y|^2
    for (double v : m_alpha) quad += v * v;
    backward_solve(m_chol, n, m_alpha.data());
    double log_det = 0;
    for (size_t i = 0; i < n; ++i) log_det += 2.0 * std::log(m_chol[i * n + i]);
    const double nn      = static_cast<double>(n);
    double signal_var    = std::max(quad / nn, 1e-12);
    m_hyper.length_scale = length_scale;
    m_hyper.noise_ratio  = noise_ratio;
    m_hyper.signal_var   = signal_var;
    m_hyper.log_ml =
        -0.5 * nn * std::log(signal_var) - 0.5 * log_det - 0.5 * nn * (1.0 + std::log(2 * std::numbers::pi));
    return true;
}

void GaussianProcess::fit(const std::vector<double>& x, const std::vector<double>& y, const GpHyper& hyper) {
    if (y.empty() || m_dims == 0 || x.size() != y.size() * m_dims)
        throw std::invalid_argument("GaussianProcess::fit: need n >= 1 points of dims coordinates and n targets");
    m_n         = y.size();
    m_x         = x;
    double mean = 0;
    for (double v : y) mean += v;
    mean /= static_cast<double>(m_n);
    double var = 0;
    for (double v : y) var += (v - mean) * (v - mean);
    var /= static_cast<double>(m_n);
    m_y_mean = mean;
    m_y_sd   = var > 1e-24 ? std::sqrt(var) : 1.0;  // all targets equal: nothing to scale
    m_y.resize(m_n);
    for (size_t i = 0; i < m_n; ++i) m_y[i] = (y[i] - m_y_mean) / m_y_sd;
    if (!factor(hyper.length_scale, hyper.noise_ratio))
        throw std::runtime_error("GaussianProcess::fit: the kernel matrix is not positive definite");
}

void GaussianProcess::fit(const std::vector<double>& x, const std::vector<double>& y) {
    GpHyper best;
    bool found = false;
    for (double ls : gp_length_scale_grid()) {
        for (double g : gp_noise_ratio_grid()) {
            GpHyper h;
            h.length_scale = ls;
            h.noise_ratio  = g;
            try {
                fit(x, y, h);
            } catch (const std::runtime_error&) {
                continue;  // not positive definite at this grid point: a larger noise ratio will be
            }
            if (!found || m_hyper.log_ml > best.log_ml) best = m_hyper;  // ties: the first (smallest) wins
            found = true;
        }
    }
    if (!found) throw std::runtime_error("GaussianProcess::fit: no hyperparameter gives a positive definite kernel");
    fit(x, y, best);
}

GaussianProcess::Prediction GaussianProcess::predict(const double* x) const {
    const size_t n = m_n;
    std::vector<double> c(n);
    double mean = 0;
    for (size_t i = 0; i < n; ++i) {
        c[i] = gp_correlation(m_kernel, m_hyper.length_scale, squared_distance(x, &m_x[i * m_dims], m_dims));
        mean += c[i] * m_alpha[i];
    }
    forward_solve(m_chol, n, c.data());
    double explained = 0;
    for (double v : c) explained += v * v;
    double var = m_hyper.signal_var * std::max(0.0, 1.0 - explained);
    return {m_y_mean + m_y_sd * mean, m_y_sd * std::sqrt(var)};
}

double expected_improvement(double mean, double sd, double best, double xi) {
    double gain = mean - best - xi;
    if (!(sd > 1e-300)) return std::max(0.0, gain);
    double z   = gain / sd;
    double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    return gain * cdf + sd * pdf;
}

}  // namespace speculum::sweep
