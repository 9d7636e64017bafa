#!/usr/bin/python3
# Builds Speculum's prompt suites (datasets/*.jsonl) from text HELD OUT of training (tools/train/data/heldout.jsonl):
# five tasks modelled on Spec-Bench's categories, 48 prompts each, deterministic (no randomness; even spacing), that
# fit a 256-token context, and two long-context tasks (prompts of 400-900 tokens) for the 1024-token model family.
# Each line: {"id", "task", "prompt", "max_new_tokens", "reference", "source"}; `reference` is the held-out text
# that really follows (or the templated answer), for inspection only.
import json
import os
import re
import sys

from bpe import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "datasets")
N_PER_TASK = 48
N_CTX = 256
PROMPT_MAX_TOKENS = 176  # incl. BOS; prompt + max_new_tokens (<= 64) stays within n_ctx = 256
LONG_N_CTX = 1024
LONG_PROMPT_MIN_TOKENS, LONG_PROMPT_MAX_TOKENS = 400, 896  # the long tasks: prompt + 64 new tokens fit 1024


def load_heldout():
    with open(os.path.join(HERE, "data", "heldout.jsonl")) as f:
        return [json.loads(line) for line in f]


def end_before_newlines(prompt, reference):
    """Moves trailing newlines from the prompt to the reference, so the prompt ends where a pre-token ends in the
    training text too (a prompt ending in "\n" would split "\n    " differently from training: see README)."""
    core = prompt.rstrip("\n")
    return core, prompt[len(core):] + reference


def spread(items, n):
    """n items evenly spaced over the list (all of them when there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


class Builder:
    def __init__(self, tok):
        self.tok = tok

    def n_tokens(self, text):
        return len(self.tok.encode(text, bos=True))

    def trim_lines_front(self, lines, budget):
        """Drops whole lines from the front until the joined text fits `budget` tokens; None if one line is too
        long."""
        while lines and self.n_tokens("".join(lines)) > budget:
            lines = lines[1:]
        return "".join(lines) if lines else None


def parse_chapter(text):
    head, _, body = text.partition("\n\n")
    verses = []
    for line in body.splitlines():
        m = re.match(r"^(\d+) (.*)$", line)
        if m:
            verses.append((int(m.group(1)), m.group(2)))
    return head, verses


def def_lines(docs, pattern):
    """(document, its lines, index) of every line matching the `def` pattern that has a non-blank next line and
    one more line after it."""
    pat = re.compile(pattern)
    for d in docs:
        lines = d["text"].splitlines(keepends=True)
        for i, line in enumerate(lines):
            if pat.match(line) and i + 2 < len(lines) and lines[i + 1].strip():
                yield d, lines, i


def code_completion(b, docs):
    """Python held-out files: the lines before a `def` line, the def line and its first body line; the model
    continues the function body."""
    cands = []
    for d, lines, i in def_lines(docs, r"^\s*def \w+\(.*\):\s*$"):
        cut = i + 2
        prompt = b.trim_lines_front(lines[max(0, cut - 14):cut], PROMPT_MAX_TOKENS)
        ref = "".join(lines[cut:cut + 8])
        if prompt and len(ref.strip()) > 20:
            cands.append((d["name"], i + 1, prompt, ref))
    # Even spread over files first, then over positions.
    by_file = {}
    for c in cands:
        by_file.setdefault(c[0], []).append(c)
    picked = []
    k = 0
    while len(picked) < N_PER_TASK * 3 and any(by_file.values()):
        for name in sorted(by_file):
            lst = by_file[name]
            if k < len(lst):
                picked.append(spread(lst, max(len(lst), 1))[(k * 7) % len(lst)])
        k += 1
        if k > 50:
            break
    picked = spread(sorted(set(picked), key=lambda c: (c[0], c[1])), N_PER_TASK)
    return [dict(zip(("prompt", "reference"), end_before_newlines(p, r)), max_new_tokens=64,
                 source="python3.11 Lib/%s line %d" % (n, ln)) for n, ln, p, r in picked]


def prose_continuation(b, chapters):
    """KJV held-out chapters: a run of verses ending with the next verse's number; the model writes the verse."""
    out = []
    for head, verses, name in chapters:
        for start in (0, len(verses) // 2):
            if start + 3 >= len(verses):
                continue
            end = min(len(verses) - 1, start + 4)
            text = (head + "\n\n" if start == 0 else "") + "".join("%d %s\n" % v for v in verses[start:end])
            nxt = verses[end]
            prompt = text + "%d" % nxt[0]
            while b.n_tokens(prompt) > PROMPT_MAX_TOKENS and end - start > 1:
                end -= 1
                text = (head + "\n\n" if start == 0 else "") + "".join("%d %s\n" % v for v in verses[start:end])
                nxt = verses[end]
                prompt = text + "%d" % nxt[0]
            if b.n_tokens(prompt) <= PROMPT_MAX_TOKENS:
                out.append({"prompt": prompt, "reference": " " + nxt[1], "max_new_tokens": 48,
                            "source": "KJV %s:%d" % (name, nxt[0])})
    return spread(out, N_PER_TASK)


DOCUMENTED_DEF = re.compile(r'^def ([A-Za-z_]\w*)\(([^)]*)\):\n    """([^\n"]+)', re.M)


def documented_functions(docs):
    """(document, module, function, docstring summary, offset of its `def`) for every public module-level function
    whose one-line docstring summary has 20 characters or more, in document order."""
    for d in docs:
        mod = d["name"][:-3].replace("/", ".").replace(".__init__", "")
        for m in DOCUMENTED_DEF.finditer(d["text"]):
            name, doc = m.group(1), m.group(3).strip()
            if not name.startswith("_") and len(doc) >= 20:
                yield d, mod, name, doc, m.start()


def ask_function(mod, name):
    return "\nQ: What does the function `%s.%s` do?\nA:" % (mod, name)


def copy_from_context(b, chapters, py_docs):
    """The answer is already in the prompt: a block of verses followed by the corpus's Q/A template asking for one of
    them; or a held-out function with its docstring followed by the Q/A template asking what it does."""
    kjv = []
    for head, verses, name in chapters:
        for s in range(0, len(verses) - 4, 6):
            block = verses[s:s + 4]
            ask = block[1 + (s // 6) % 3]
            q = "\nQ: What does %s:%d say?\nA:" % (name, ask[0])
            prompt = "".join("%d %s\n" % v for v in block) + q
            if b.n_tokens(prompt) <= PROMPT_MAX_TOKENS and len(ask[1]) > 40:
                kjv.append({"prompt": prompt, "reference": " " + ask[1], "max_new_tokens": 48,
                            "source": "KJV %s:%d-%d" % (name, block[0][0], block[-1][0])})
    py = []
    for d, mod, name, doc, start in documented_functions(py_docs):
        lines = d["text"][start:].splitlines(keepends=True)[:6]
        q = ask_function(mod, name)
        while lines and b.n_tokens("".join(lines) + q) > PROMPT_MAX_TOKENS:
            lines = lines[:-1]
        if len(lines) >= 2:
            py.append({"prompt": "".join(lines) + q, "reference": " " + doc, "max_new_tokens": 32,
                       "source": "python3.11 Lib/%s: %s" % (d["name"], name)})
    half = N_PER_TASK // 2
    py = spread(py, half)
    return spread(kjv, N_PER_TASK - len(py)) + py


# An entry line of a literal: indented, starts like a value or `key:`/`key=`, ends with , ( [ { a quote or a comment.
LIST_LINE = re.compile(r"""^\s+(['"(\[{]|-?\d|[A-Za-z_][\w.]*\s*[:=]).*([,(\[{'"]|#.*)\s*$""")


def line_key(line):
    """Lines of a table-like run share a kind: a literal entry (LIST_LINE, any indentation) or, at one indentation,
    the same leading word (runs of `self.x = ...`, `CONSTANT = ...`, `import`, `elif`, `case`)."""
    if LIST_LINE.match(line):
        return "entry"
    m = re.match(r"^(\s*)(self\.\w+ = |[A-Z][A-Z0-9_]* = |import |from \S+ import |elif |case )", line)
    if not m:
        return None
    word = m.group(2)
    if word.startswith("self."):
        word = "self."
    elif word.endswith(" = "):
        word = "CONST ="
    elif word.startswith("from "):
        word = "from"
    return (len(m.group(1)), word)


def structured_lists(b, docs):
    """Table-like runs of >= 6 lines in held-out Python files (character tables, dict/list/tuple literals,
    __all__ lists, runs of assignments or imports): the lines before and the first entries; the model continues
    the run."""
    cands = []
    for d in docs:
        lines = d["text"].splitlines(keepends=True)
        i = 0
        while i < len(lines):
            k = line_key(lines[i])
            j = i
            while k is not None and j < len(lines) and line_key(lines[j]) == k:
                j += 1
            if j - i >= 6:
                for cut in range(i + 3, j - 2, 4):  # several cut points inside long tables
                    prompt = b.trim_lines_front(lines[max(0, cut - 12):cut], PROMPT_MAX_TOKENS)
                    if prompt:
                        cands.append((d["name"], cut, prompt, "".join(lines[cut:cut + 6])))
                i = j
            else:
                i += 1
    by_file = {}
    for c in cands:
        by_file.setdefault(c[0], []).append(c)
    quota = 8  # keep any one file (e.g. a codec table) from dominating
    picked = []
    for name in sorted(by_file):
        picked += spread(by_file[name], quota)
    picked = spread(picked, N_PER_TASK)
    return [dict(zip(("prompt", "reference"), end_before_newlines(p, r)), max_new_tokens=64,
                 source="python3.11 Lib/%s line %d" % (n, ln + 1)) for n, ln, p, r in picked]


def question_answer(b, qa_docs):
    """The corpus's Q/A templates over held-out verses and functions, two-shot: two held-out Q/A pairs from the same
    chapter or module, then a question whose answer is NOT in the prompt."""
    out = []
    for d in qa_docs:
        pairs = [p.strip() + "\n" for p in d["text"].split("\n\n") if p.strip()]
        if len(pairs) < 3:
            continue
        for k in range(2, len(pairs), 5):
            q, _, a = pairs[k].partition("\nA:")
            prompt = "\n".join(pairs[k - 2:k]) + "\n" + q + "\nA:"
            if b.n_tokens(prompt) <= PROMPT_MAX_TOKENS:
                out.append({"prompt": prompt, "reference": a.rstrip("\n"), "max_new_tokens": 48,
                            "source": "templated Q/A over held-out %s" % d["name"]})
    kjv = [o for o in out if "kjv " in o["source"]]
    py = [o for o in out if "py " in o["source"]]
    py = spread(py, N_PER_TASK // 3)
    return spread(kjv, N_PER_TASK - len(py)) + py


def long_code_completion(b, docs):
    """Held-out Python files (stdlib, NumPy, SymPy, mpmath): up to LONG_PROMPT_MAX_TOKENS of the file before a `def`
    line, the def line and its first body line; the model continues the body with the whole file so far in view
    (sibling methods, names and idioms to copy from)."""
    cands = []
    for d, lines, i in def_lines(docs, r"^\s+def \w+\(.*\):\s*$"):  # methods
        cut = i + 2
        lo = max(0, cut - 120)
        if b.n_tokens("".join(lines[lo:cut])) < LONG_PROMPT_MIN_TOKENS:
            continue
        prompt = b.trim_lines_front(lines[lo:cut], LONG_PROMPT_MAX_TOKENS)
        ref = "".join(lines[cut:cut + 8])
        if prompt and b.n_tokens(prompt) >= LONG_PROMPT_MIN_TOKENS and len(ref.strip()) > 20:
            cands.append((d["src"], d["name"], i + 1, prompt, ref))
    by_file = {}
    for c in cands:
        by_file.setdefault(c[1], []).append(c)
    picked = []
    for name in sorted(by_file):
        picked += spread(by_file[name], 2)  # at most two per file
    picked = spread(picked, N_PER_TASK)
    where = {"py": "python3.11 Lib/", "lib": "dist-packages/"}
    return [dict(zip(("prompt", "reference"), end_before_newlines(p, r)), max_new_tokens=64,
                 source="%s%s line %d" % (where[src], n, ln)) for src, n, ln, p, r in picked]


def long_copy_from_context(b, chapters, code_docs):
    """The answer is in the prompt, far back: a whole held-out chapter (up to LONG_PROMPT_MAX_TOKENS) then the Q/A
    template asking for one of its first verses; or a held-out source file from a documented function on, then
    the template asking what that function does."""
    kjv = []
    for head, verses, name in chapters:
        text = head + "\n\n"
        for v in verses:
            if b.n_tokens(text + "%d %s\n" % v) > LONG_PROMPT_MAX_TOKENS - 24:
                break
            text += "%d %s\n" % v
        n_in = text.count("\n") - 2
        ask = verses[min(2, n_in - 1)]
        prompt = text + "\nQ: What does %s:%d say?\nA:" % (name, ask[0])
        if LONG_PROMPT_MIN_TOKENS <= b.n_tokens(prompt) <= LONG_PROMPT_MAX_TOKENS and len(ask[1]) > 40:
            kjv.append({"prompt": prompt, "reference": " " + ask[1], "max_new_tokens": 48,
                        "source": "KJV %s:1-%d" % (name, verses[n_in - 1][0])})
    code, used = [], set()
    for d, mod, name, doc, start in documented_functions(code_docs):
        if d["name"] in used:
            continue  # one per file
        q = ask_function(mod, name)
        lines = d["text"][start:].splitlines(keepends=True)[:120]
        while lines and b.n_tokens("".join(lines) + q) > LONG_PROMPT_MAX_TOKENS:
            lines = lines[:-1]
        if lines and b.n_tokens("".join(lines) + q) >= LONG_PROMPT_MIN_TOKENS:
            code.append({"prompt": "".join(lines) + q, "reference": " " + doc, "max_new_tokens": 32,
                         "source": "%s: %s" % (d["name"], name)})
            used.add(d["name"])
    code = spread(code, N_PER_TASK // 2)
    return spread(kjv, N_PER_TASK - len(code)) + code


def main():
    tok = Tokenizer.load(os.path.join(HERE, "data", "tokenizer.json"))
    b = Builder(tok)
    held = load_heldout()
    py_docs = [d for d in held if d["src"] == "py"]
    chapters = []
    for d in held:
        if d["src"] == "kjv":
            head, verses = parse_chapter(d["text"])
            chapters.append((head, verses, d["name"]))
    qa_docs = [d for d in held if d["src"] == "qa"]
    tasks = {
        "code_completion": code_completion(b, py_docs),
        "prose_continuation": prose_continuation(b, chapters),
        "copy_from_context": copy_from_context(b, chapters, py_docs),
        "structured_lists": structured_lists(b, py_docs),
        "question_answer": question_answer(b, qa_docs),
        "long_code_completion": long_code_completion(b, [d for d in held if d["src"] in ("py", "lib")]),
        "long_copy_from_context": long_copy_from_context(b, chapters, [d for d in held if d["src"] in ("py", "lib")]),
    }
    os.makedirs(OUT, exist_ok=True)
    for task, items in tasks.items():
        if len(items) < 40:
            raise SystemExit("%s: only %d prompts" % (task, len(items)))
        with open(os.path.join(OUT, task + ".jsonl"), "w") as f:
            for i, it in enumerate(items):
                n = b.n_tokens(it["prompt"])
                n_ctx = LONG_N_CTX if task.startswith("long_") else N_CTX
                if n + it["max_new_tokens"] > n_ctx or not it["prompt"].isascii():
                    raise SystemExit("%s #%d: prompt of %d tokens does not fit" % (task, i, n))
                rec = {"id": "%s-%03d" % (task, i), "task": task, "prompt": it["prompt"],
                       "max_new_tokens": it["max_new_tokens"], "reference": it["reference"], "source": it["source"]}
                f.write(json.dumps(rec) + "\n")
        lens = [b.n_tokens(it["prompt"]) for it in items]
        print("%-20s %d prompts, prompt tokens (incl. BOS) %d..%d, mean %.0f" % (
            task, len(items), min(lens), max(lens), sum(lens) / len(lens)))


if __name__ == "__main__":
    sys.exit(main())
