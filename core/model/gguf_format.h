// Human-readable and JSON renderings of GGUF metadata values, shared by `speculum-cli inspect` and the UI.
// Long arrays and strings are summarised (count + the first few items), never printed in full.
#pragma once

#include "core/model/gguf.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace speculum::model {

// One line: 42, 1e-05, true, 'text' (control bytes escaped, cut after max_chars), or for arrays
// "[32000 strings: '<unk>', '<s>', '</s>', ...]" showing at most max_items elements.
std::string gguf_value_summary(const GgufValue& v, size_t max_items = 3, size_t max_chars = 120);

// JSON: scalars as JSON values (UINT64 as an unsigned number, strings as-is; dump with error_handler_t::replace
// since GGUF strings need not be UTF-8); arrays as {"element_type", "count", "head": [first max_items values]}.
nlohmann::json gguf_value_json(const GgufValue& v, size_t max_items = 8);

}  // namespace speculum::model
