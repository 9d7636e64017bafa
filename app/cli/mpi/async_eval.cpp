// AsyncEvaluation (see async_eval.h).
#include "async_eval.h"

namespace speculum::cli::mpi {

AsyncEvaluation::AsyncEvaluation(const sweep::SweepSpec& spec, sweep::Evaluator& evaluator, sweep::SweepPoint point,
                                 int prompts)
    : m_point(std::move(point)), m_thread([this, &spec, &evaluator, prompts] {
          try {
              m_row = sweep::evaluate_point(spec, evaluator, m_point, prompts, m_token);
          } catch (const Cancelled&) {
              // cancelled: neither a row nor an error
          } catch (const std::exception& e) {  // outside the evaluator (the evaluator's own errors are rows)
              m_error = e.what();
          } catch (...) {
              m_error = "unknown exception";
          }
          m_finished.store(true, std::memory_order_release);
      }) {}

AsyncEvaluation::~AsyncEvaluation() {
    m_token.cancel();
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace speculum::cli::mpi
