// The controller's opening of a model (a GGUF, or the random-weight presets written as one) and a dataset, each on a
// job; the open model, its results and its measurement stay until the new one has loaded.
#include "ui/model/app_controller.h"

#include "core/data/dataset.h"
#include "core/engine/acceptance_profile.h"
#include "core/model/gguf.h"
#include "core/model/synthetic.h"
#include "core/resources.h"

#include <algorithm>
#include <filesystem>

namespace speculum::ui {

namespace fs = std::filesystem;

namespace {

std::string file_name(const std::string& path) {
    return fs::path(path).filename().string();
}

}  // namespace

void AppController::open_model(const std::string& path) {
    // The open model, its results and its measurement stay until the new one has loaded: a file that fails to load
    // costs nothing but the message. A run still going on the old model is stopped, so that it cannot land on the
    // new one.
    cancel_job(m_jobs.latest("measure"), false);
    m_rerun_at.reset();
    m_snap.model_state = ModelState::reading;
    changed();
    submit("model", "Loading model " + file_name(path),
           [this, path](jobs::JobContext& ctx) -> Apply { return load_model_job(path, ctx); });
}

std::optional<model::SyntheticSpec> synthetic_preset(const std::string& arch) {
    // Small enough to build in seconds, large enough that the experts' (and a recurrent state's) costs show: width
    // 512, 4 layers, 8 heads of 64, the bundled tokenizer's 2048 tokens. qwen3moe: Qwen3-30B-A3B's proportions (64
    // experts, 8 per token, width 3/8); gpt-oss: gpt-oss-20b's (16 experts, 4 per token, the model's width; MXFP4,
    // window 128).
    model::SyntheticSpec s;
    s.arch = arch, s.n_vocab = 2048, s.n_embd = 512, s.n_layer = 4, s.n_head = 8, s.n_head_kv = 2;
    s.n_embd_head = 64, s.n_ctx = 2048, s.seed = 49;
    if (arch == "qwen3moe") {
        s.n_ff = 1536, s.n_expert = 64, s.n_expert_used = 8, s.n_ff_exp = 192, s.type = kernels::GgmlType::Q8_0;
    } else if (arch == "gpt-oss") {
        s.n_ff = 512, s.n_expert = 16, s.n_expert_used = 4, s.n_ff_exp = 512, s.n_swa = 128;
        s.rope_freq_base = 150000.0f, s.type = kernels::GgmlType::MXFP4;
    } else if (arch == "qwen35" || arch == "qwen35moe") {
        // Qwen 3.5's proportions: DeltaNet heads with a 128-wide state (4 key, 8 value heads), every 4th layer gated
        // attention with a quarter of each head rotated; one MTP layer; qwen35moe adds 32 experts (4 per token) and a
        // shared expert.
        s.n_ff = 1536, s.n_rot = 16, s.ssm_d_state = 128, s.ssm_n_group = 4, s.ssm_dt_rank = 8, s.n_nextn = 1;
        s.type = kernels::GgmlType::Q8_0;
        if (arch == "qwen35moe") s.n_expert = 32, s.n_expert_used = 4, s.n_ff_exp = 192, s.n_ff_shexp = 512;
    } else {
        return std::nullopt;
    }
    return s;
}

void AppController::open_synthetic_model(const std::string& arch) {
    const std::optional<model::SyntheticSpec> spec = synthetic_preset(arch);
    if (!spec) {
        message(MessageLevel::error, "No random-weight preset for '" + arch + "' (qwen3moe, gpt-oss)");
        return;
    }
    cancel_job(m_jobs.latest("measure"), false);
    m_rerun_at.reset();
    m_snap.model_state = ModelState::reading;
    changed();
    submit("model", "Loading model: random " + arch, [this, s = *spec](jobs::JobContext& ctx) -> Apply {
        const model::Model m = model::make_synthetic_model(s, ctx.progress_fn(), ctx.token());
        const std::string path =
            (std::filesystem::temp_directory_path() / ("speculum-random-" + s.arch + ".gguf")).string();
        const model::GgufFile vocab = model::GgufFile::open(resource_path(kBundledTargetModel).string());
        model::write_model_gguf(m, path, &vocab);
        return load_model_job(path, ctx);
    });
}

AppController::Apply AppController::load_model_job(const std::string& path, jobs::JobContext& ctx) {
    {
        model::GgufFile file = model::GgufFile::open(path);
        ModelSummary summary = summarize_gguf(file);
        if (!summary.hparams) throw std::runtime_error(summary.hparams_error);
        auto model = std::make_shared<const model::Model>(
            model::Model::from_gguf(std::move(file), ctx.progress_fn(), ctx.token()));
        return [this, model, summary] {
            m_model            = model;
            m_snap.model       = summary;
            m_snap.model_state = ModelState::loaded;
            m_snap.measured.reset();
            m_snap.measured_config.reset();
            message(MessageLevel::info,
                    "Loaded " + summary.name + " (" + format_count(summary.n_params) + " parameters)");
            refresh_modeled();
            refresh_notes();
            schedule_rerun();
            refresh_head_cost();
        };
    }
}

void AppController::open_dataset(const std::string& path, const std::string& task) {
    submit("dataset", "Reading dataset " + file_name(path), [this, path, task](jobs::JobContext&) -> Apply {
        DatasetSummary summary = summarize_dataset(data::load_dataset_lenient(path));
        return [this, summary, task] {
            m_snap.dataset = summary;
            m_snap.task.clear();
            if (std::find(summary.tasks.begin(), summary.tasks.end(), task) != summary.tasks.end()) m_snap.task = task;
            if (summary.issues.empty())
                message(MessageLevel::info,
                        "Opened " + file_name(summary.path) + ": " + std::to_string(summary.n_prompts) + " prompts");
            else
                message(MessageLevel::error, summary.issues);
            schedule_rerun();
        };
    });
}

void AppController::file_picked(const ActionFilePicked& a) {
    AppConfig cfg = m_snap.config;
    if (a.field == FileField::acceptance_profile) {
        try {
            LoadedAcceptanceProfile loaded{a.path, engine::load_acceptance_profile(a.path)};
            if (loaded.profile.conditional.empty())
                throw std::invalid_argument(a.path + ": no acceptance per position");
            const size_t n                 = loaded.profile.conditional.size();
            cfg.modeled.acceptance_profile = std::move(loaded);
            set_config(cfg);
            message(MessageLevel::info, "The modeled panels take alpha per position (" + std::to_string(n) +
                                            " positions) from " + file_name(a.path) + ".");
        } catch (const std::exception& e) {
            message(MessageLevel::error, std::string(e.what()) + " (the modeled assumptions are unchanged)");
        }
        return;
    }
    if (a.level < 0 || size_t(a.level) >= cfg.spec.levels.size()) return;
    std::error_code ec;
    if (!fs::is_regular_file(a.path, ec)) {
        message(MessageLevel::error, a.path + ": not a file (the draft is unchanged)");
        return;
    }
    if (a.field == FileField::head_corpus)  // the prompt suite whose token frequencies pick a reduced head
        cfg.spec.levels[size_t(a.level)].head_vocab_corpus = a.path;
    else
        cfg.spec.levels[size_t(a.level)].model_path = a.path;
    set_config(cfg);
}

}  // namespace speculum::ui
