#!/usr/bin/env python3
"""Chat-template goldens from llama.cpp (llama_chat_apply_template via `oracle chat`), issue #23.

For every format name llama.cpp accepts in place of a template, and for short template texts of our own that carry
each family's marker strings (what llama.cpp detects a real template by), the rendering of two conversations.
tests/core/chat_template_test.cpp checks Speculum's renderer against them.

    tools/parity/chat_goldens.py --oracle /tmp/oracle/build/oracle --out tests/core/golden/chat/llama_cpp.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

NAMES = ["chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1", "mistral-v3",
         "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "phi3", "phi4", "falcon3", "zephyr", "monarch",
         "gemma", "openchat", "vicuna", "vicuna-orca", "deepseek", "deepseek2", "deepseek3", "command-r", "llama3",
         "exaone3", "granite", "llama4", "gpt-oss"]
# Template texts of our own with each family's markers (not real templates): what detection keys on.
MARKERS = {
    "{{ '<|im_start|>' + message['role'] }}": "chatml",
    "{{ '<|im_start|>' }}{{ '<|im_sep|>' }}": "phi4",
    "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}": "llama2",
    "[INST] <<SYS>>\\n{{ system }}\\n<</SYS>>": "llama2-sys",
    "{{ bos_token + '[INST] ' }}<<SYS>>": "llama2-sys-bos",
    "[INST] {{ message['content'].strip() }} content.strip()": "llama2-sys-strip",
    "[SYSTEM_PROMPT]{{ system }}[/SYSTEM_PROMPT][INST]": "mistral-v7",
    "{{ ' [INST] ' + system_message }}": "mistral-v1",
    "[AVAILABLE_TOOLS]{{ \"[INST]\" }}": "mistral-v3-tekken",
    "[AVAILABLE_TOOLS][INST]": "mistral-v3",
    "<|user|>{{ m }}<|end|><|assistant|>": "phi3",
    "<|user|>{{ m }}<|assistant|></s>": "falcon3",
    "<|user|>{{ m }}<|endoftext|>": "zephyr",
    "{{ bos_token + message['role'] }}": "monarch",
    "<start_of_turn>{{ role }}": "gemma",
    "GPT4 Correct {{ role }}": "openchat",
    "USER: {{ m }} ASSISTANT: ": "vicuna",
    "SYSTEM: {{ s }} USER: {{ m }} ASSISTANT: ": "vicuna-orca",
    "### Instruction:\\n{{ m }}<|EOT|>": "deepseek",
    "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>": "command-r",
    "<|start_header_id|>{{ role }}<|end_header_id|>": "llama3",
    "{{ 'Assistant: ' + message['content'] + eos_token }}": "deepseek2",
    "<｜User｜>{{ m }}<｜Assistant｜><｜end▁of▁sentence｜>": "deepseek3",
    "[|system|]{{ s }}[|endofturn|][|assistant|]": "exaone3",
    "<|start_of_role|>{{ role }}<|end_of_role|>": "granite",
    "<|header_start|>{{ role }}<|header_end|>": "llama4",
    "<|start|>{{ role }}<|channel|>final<|message|>": "gpt-oss",
}
CONVERSATIONS = [
    [("system", "You are terse."), ("user", "Name a prime.")],
    [("user", "  Hi there\n"), ("assistant", " Hello! "), ("user", "Add 2 and 3.")],
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for tmpl in NAMES + list(MARKERS):
            tmpl_text = tmpl.replace("\\n", "\n")
            tpath = os.path.join(tmp, "t.txt")
            open(tpath, "w", encoding="utf-8").write(tmpl_text)
            for ci, conv in enumerate(CONVERSATIONS):
                mpath = os.path.join(tmp, "m.txt")
                open(mpath, "w", encoding="utf-8").write(
                    "".join(f"{r}\t{c.replace(chr(10), chr(92) + 'n')}\n" for r, c in conv))
                for add in (True, False):
                    r = subprocess.run([a.oracle, "chat", tpath, mpath, "1" if add else "0"], capture_output=True)
                    if r.returncode != 0:
                        sys.exit(f"oracle chat failed for {tmpl!r}: {r.stderr.decode()}")
                    cases.append({"template": tmpl_text, "expect_format": MARKERS.get(tmpl, tmpl),
                                  "messages": [{"role": ro, "content": co} for ro, co in conv],
                                  "add_assistant": add, "text": r.stdout.decode("utf-8")})
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"oracle": "llama.cpp llama_chat_apply_template (tools/parity/oracle.cpp)", "cases": cases}, f,
                  ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
