// Switching the drafter kind never traps the user: from every kind, with every setting of that kind in use, to every
// other kind, the configuration the controller keeps is valid (no red error with nothing visible to fix it), what
// was cleared is listed in the status line, and switching back brings nothing stale back.
#include "ui/model/app_controller.h"
#include "ui/ui_fixtures.h"

#include <gmock/gmock.h>

using namespace speculum;
using drafts::DraftKind;
using ::testing::HasSubstr;

namespace {

// A level of `kind` with every setting its kind has in use (valid for the app).
drafts::DraftSpec loaded_level(DraftKind kind) {
    drafts::DraftSpec d;
    d.kind = kind;
    switch (kind) {
        case DraftKind::self:
            d.prune.ratio = 0.5f, d.weight_trunc_bits = 4, d.kv_trunc_bits = 3, d.kv_drop_ratio = 0.2f;
            d.exit_layer = 1, d.skip_attn = {0};
            break;
        case DraftKind::model:
            d.model_path = "/models/small-draft.gguf";
            break;
        case DraftKind::maxgram:
            d.bigram_corpus = "datasets/prose_continuation.jsonl", d.maxgram.min_match = 2;
            break;
        case DraftKind::ngram:
            d.ngram.method = drafts::NgramMethod::suffix;
            break;
        case DraftKind::mtp:
            d.model_path = "/models/mtp-module.gguf", d.mtp_layer = 1;
            break;
        case DraftKind::eagle3:
            d.model_path = "/models/eagle3-head.gguf";
            break;
        case DraftKind::dflash:
        case DraftKind::dspark:
            d.model_path = "/models/block-draft.gguf";
            break;
    }
    return d;
}

}  // namespace

TEST(AppKindSwitch, EveryPairOfKindsLeavesAValidConfigurationAndSaysWhatWasCleared) {
    for (size_t from = 0; from < drafts::kDraftKindCount; ++from)
        for (size_t to = 0; to < drafts::kDraftKindCount; ++to) {
            if (from == to) continue;
            const auto a = DraftKind(from), b = DraftKind(to);
            SCOPED_TRACE(std::string(drafts::to_string(a)) + " -> " + drafts::to_string(b));
            ui::AppController c;
            ui::AppConfig cfg = c.snapshot().config;
            cfg.draft()       = loaded_level(a);
            c.handle(ui::ActionSetConfig{cfg});
            ASSERT_TRUE(c.snapshot().config_problems.empty()) << c.snapshot().config_problems.front();
            ASSERT_EQ(c.snapshot().config.draft(), loaded_level(a)) << "a valid configuration is kept as it is";

            cfg              = c.snapshot().config;
            cfg.draft().kind = b;  // what the drafter combo does
            c.handle(ui::ActionSetConfig{cfg});
            const ui::UiSnapshot& s = c.snapshot();
            EXPECT_EQ(s.config.draft().kind, b);
            EXPECT_TRUE(s.config_problems.empty()) << s.config_problems.front();
            EXPECT_TRUE(s.config.problems().empty());
            EXPECT_THAT(s.status_line, HasSubstr("cleared")) << "every loaded kind has something that does not carry";
            EXPECT_THAT(s.status_line, HasSubstr(ui::draft_kind_name(a)));
            if (a == DraftKind::self) {
                EXPECT_THAT(s.status_line, HasSubstr("runing 0.5"));
                EXPECT_THAT(s.status_line, HasSubstr("4-bit weight truncation"));
            }
            if (a == DraftKind::model || a == DraftKind::mtp || a == DraftKind::eagle3 || a == DraftKind::dflash ||
                a == DraftKind::dspark) {
                EXPECT_TRUE(s.config.draft().model_path.empty()) << "another kind's file is not this kind's";
            }
            // Back to the first kind: nothing of the old settings comes back with it.
            cfg              = s.config;
            cfg.draft().kind = a;
            c.handle(ui::ActionSetConfig{cfg});
            drafts::DraftSpec plain;
            plain.kind = a;
            EXPECT_EQ(c.snapshot().config.draft(), plain);
            EXPECT_TRUE(c.snapshot().config_problems.empty());
        }
}

TEST(AppKindSwitch, ASettingThatStillAppliesIsKept) {
    drafts::DraftSpec d = loaded_level(DraftKind::ngram);
    d.kind              = DraftKind::ngram;  // unchanged kind: nothing to drop
    EXPECT_TRUE(drafts::drop_inapplicable(d, d).empty());
    EXPECT_EQ(d.ngram.method, drafts::NgramMethod::suffix);
    drafts::DraftSpec plain_self;  // nothing set: nothing said
    drafts::DraftSpec model = plain_self;
    model.kind              = DraftKind::model;
    EXPECT_TRUE(drafts::drop_inapplicable(model, plain_self).empty());
    // A whole configuration that changes the kind and gives the new kind's file (a stored row, tune's apply) keeps
    // the file; only a file carried over from the old kind is dropped.
    drafts::DraftSpec head = loaded_level(DraftKind::eagle3), before = loaded_level(DraftKind::model);
    EXPECT_TRUE(drafts::drop_inapplicable(head, before).empty());
    EXPECT_EQ(head.model_path, "/models/eagle3-head.gguf");
    drafts::DraftSpec carried = before;
    carried.kind              = DraftKind::eagle3;
    EXPECT_THAT(drafts::drop_inapplicable(carried, before), ::testing::ElementsAre("the file small-draft.gguf"));
    EXPECT_TRUE(carried.model_path.empty());
}

// Every red error names the control that fixes it, found from the field the message names.
TEST(AppKindSwitch, EveryProblemNamesTheControlThatFixesIt) {
    EXPECT_EQ(ui::fixing_control("/levels/0/prune/ratio: must be in [0, 1), got 1.2"),
              "Configuration > Draft > prune ratio and method");
    EXPECT_EQ(ui::fixing_control("/gamma/0: must be in [1, 64], got 0"),
              "Configuration > Decoding > gamma (a cascade level's: Configuration > Cascade)");
    EXPECT_EQ(ui::fixing_control("modeled/levels/0/alpha must be in (0, 1), got 1"),
              "Configuration > Assumptions > alpha");
    EXPECT_EQ(ui::fixing_control("draft.kind: is \"model\": self-draft transforms (prune, truncation) apply only"),
              "Configuration > Draft > drafter");
    EXPECT_EQ(ui::fixing_control("/levels: a tree cannot verify a cascade"), "Configuration > Verification tree");
    EXPECT_EQ(ui::fixing_control("/levels: at most 4"), "Configuration > Cascade");
    EXPECT_EQ(ui::fixing_control("something else entirely"), "");
    EXPECT_EQ(ui::with_fix("/max_prompts must be in [1, 64] in the app, got 90"),
              "/max_prompts must be in [1, 64] in the app, got 90 (fix: Configuration > Measured run > prompts)");
    // The app's own problems all name a control.
    ui::AppConfig cfg;
    cfg.spec.gamma[0]       = 0;
    cfg.level1().alpha      = 1.5;
    cfg.spec.max_new_tokens = 5000;
    cfg.draft().kind        = drafts::DraftKind::self;
    cfg.draft().exit_layer  = -5;
    for (const std::string& p : cfg.problems()) EXPECT_NE(ui::fixing_control(p), "") << p;
}
