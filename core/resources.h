// Where the bundled resources (models, datasets, hardware profiles) are found at run time.
// Search order: $SPECULUM_RESOURCES (a folder holding models/, hardware/ ...), then the source tree this binary
// was built from (SPECULUM_SOURCE_DIR/resources and /datasets), then an installed share/speculum next to the binary.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace speculum {

// The resources folder (holding models/, hardware/), or nullopt when none of the candidates exists.
std::optional<std::filesystem::path> resources_dir();

// The datasets folder (holding *.jsonl prompt suites), or nullopt.
std::optional<std::filesystem::path> datasets_dir();

// Every candidate that was tried, in order, for error messages ("looked in: A, B, C").
std::vector<std::filesystem::path> resource_candidates();

// The bundled model family (see resources/models/README.md), relative to the resources folder: a target that is
// memory-bound on desktop CPUs (70 MiB of BF16 weights), a mid-level draft (10 M parameters) and a small draft
// (1.3 M), sharing one tokenizer and a 1024-token context, so that small -> mid -> target cascades are real.
constexpr const char* kBundledTargetModel = "models/speculum-target-bf16.gguf";
constexpr const char* kBundledMidModel    = "models/speculum-mid-f16.gguf";
constexpr const char* kBundledDraftModel  = "models/speculum-draft-f16.gguf";
// The bundled target's EAGLE-3 draft head (tools/train/train_eagle3.py; drafts/eagle3.h).
constexpr const char* kBundledEagle3Head = "models/speculum-target-eagle3-f16.gguf";
// The bundled target's multi-token-prediction layer as an MTP module (tools/train/train_mtp.py; model/mtp_module.h).
constexpr const char* kBundledMtpModule = "models/speculum-target-mtp-f16.gguf";
// The bundled target's block drafts (tools/train/train_dflash.py; drafts/dflash.h): DFlash, and DSpark with its
// Markov and confidence heads.
constexpr const char* kBundledDflash = "models/speculum-target-dflash-f16.gguf";
constexpr const char* kBundledDspark = "models/speculum-target-dspark-f16.gguf";

// resources_dir() / relative, or a std::runtime_error naming the resource and every place looked at.
std::filesystem::path resource_path(const std::filesystem::path& relative);

}  // namespace speculum
