// Draft stack assembly from DraftSpecs and prompt resolution.
#include "core/engine/session.h"

#include "core/data/dataset.h"
#include "core/drafts/model_drafter.h"

#include <algorithm>
#include <stdexcept>

namespace speculum::engine {

std::shared_ptr<CompositeDrafter> make_draft_stack(const SpecConfig& cfg, const model::Model& target,
                                                   const drafts::DrafterOptions& options) {
    std::vector<LevelMaterial> mats;
    drafts::DrafterOptions o = options;
    o.context                = cfg.context;
    for (size_t i = 0; i < cfg.levels.size(); ++i) {
        LevelMaterial m;
        try {
            m.drafter = std::shared_ptr<drafts::Drafter>(drafts::make_drafter(cfg.levels[i], target, o));
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("spec.levels[" + std::to_string(i) + "]: " + e.what());
        }
        if (const auto* md = dynamic_cast<const drafts::ModelDrafter*>(m.drafter.get())) {
            m.model   = &md->model();
            m.options = md->forward_options();
            m.cost    = md->cost_model();
        }
        m.name = cfg.levels[i].label.empty() ? cfg.levels[i].describe() : cfg.levels[i].label;
        mats.push_back(std::move(m));
    }
    return build_draft_stack(cfg, mats);
}

std::vector<RunPrompt> resolve_prompts(const SpecConfig& cfg, const model::Tokenizer* tokenizer) {
    std::vector<RunPrompt> out;
    // A rendered chat holds the template's special tokens as text (<|im_start|>, ...): they are parsed as specials.
    auto encode = [&](const std::string& text, const std::string& field, bool parse_special = false) {
        if (!tokenizer)
            throw std::invalid_argument(field +
                                        ": text prompts need the target's tokenizer (its GGUF has none); "
                                        "use spec.prompt_ids");
        std::vector<int32_t> ids = tokenizer->encode(text, true, parse_special);
        if (ids.empty()) throw std::invalid_argument(field + ": the prompt encodes to no tokens");
        return ids;
    };
    if (!cfg.dataset.empty()) {
        const data::Dataset ds = data::load_dataset(cfg.dataset);
        for (const data::Prompt& p : ds.prompts) {
            if (!cfg.task.empty() && p.task != cfg.task) continue;
            if (static_cast<int32_t>(out.size()) >= cfg.max_prompts) break;
            const std::string where = cfg.dataset + ":" + std::to_string(p.line);
            if (!p.messages.empty() && !tokenizer) encode("", where);  // the no-tokenizer message
            const std::string text = data::prompt_text(p, tokenizer ? tokenizer->vocab().chat_template : "", cfg.dataset);
            out.push_back({p.id, p.task, encode(text, where, !p.messages.empty()),
                           std::min(p.max_new_tokens, cfg.max_new_tokens)});
        }
        if (out.empty()) {
            std::string tasks;
            for (const auto& t : ds.tasks()) tasks += (tasks.empty() ? "" : ", ") + t;
            throw std::invalid_argument("spec.task: no prompt of task \"" + cfg.task + "\" in " + cfg.dataset +
                                        " (tasks: " + tasks + ")");
        }
        return out;
    }
    if (!cfg.prompt.empty()) {
        out.push_back({"prompt", "", encode(cfg.prompt, "spec.prompt"), cfg.max_new_tokens});
        return out;
    }
    if (!cfg.prompt_ids.empty()) {
        out.push_back({"prompt", "", cfg.prompt_ids, cfg.max_new_tokens});
        return out;
    }
    throw std::invalid_argument("spec.prompt: no prompt given (set prompt, prompt_ids or dataset)");
}

}  // namespace speculum::engine
