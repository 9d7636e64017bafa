// The table of draft kinds (core/drafts/draft_kind.h): a row per kind, in enum order, with distinct names that the
// JSON reader takes back, and assumptions the app can model.
#include "core/drafts/draft_kind.h"

#include "core/drafts/draft_spec.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace speculum::drafts;

TEST(DraftKinds, EveryKindHasARow) {
    std::set<std::string> names, displays;
    for (int i = 0; i < kDraftKindCount; ++i) {
        const DraftKindInfo& info = draft_kind_info(static_cast<DraftKind>(i));
        EXPECT_EQ(static_cast<int>(info.kind), i) << "rows in enum order";
        EXPECT_TRUE(names.insert(info.name).second) << info.name;
        EXPECT_TRUE(displays.insert(info.display).second) << info.display;
        EXPECT_GT(info.assumed_alpha, 0.0);
        EXPECT_LT(info.assumed_alpha, 1.0);
        EXPECT_GE(info.assumed_c, 0.0);
        EXPECT_FALSE(info.statistical && info.reads_target_states);
        EXPECT_EQ(info.statistical, info.assumed_c == 0.0) << "only statistical drafters run no forward pass";
        // The name is what JSON carries: it reads back as the kind.
        DraftSpec d;
        d.kind = info.kind;
        if (info.kind == DraftKind::model) d.model_path = "draft.gguf";
        EXPECT_EQ(nlohmann::json(d).get<DraftSpec>().kind, info.kind) << info.name;
        EXPECT_STREQ(to_string(info.kind), info.name);
    }
    EXPECT_EQ(static_cast<int>(DraftKind::dspark) + 1, kDraftKindCount) << "the last kind closes the table";
}
