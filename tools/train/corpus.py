#!/usr/bin/python3
# Builds the training corpus for Speculum's bundled models from Debian 12 packages: the King James Bible
# (bible-kjv-text, public domain) and the Python 3.11 standard library sources (PSF licence), plus templated Q/A.
# Output: tools/train/data/{train,heldout}.jsonl, one document per line {"src", "name", "text"}; ASCII only.
import glob
import json
import os
import re
import subprocess
import sys
import unicodedata
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
PY_ROOT = "/usr/lib/python3.11"
# Folders of the standard library left out: test suites, IDLE, vendored/third-party and build configuration.
PY_EXCLUDE = ("test/", "tests/", "idlelib/", "site-packages/", "dist-packages/", "config-3.11", "__pycache__",
              "lib2to3/tests/", "ensurepip/")
KJV_HOLDOUT_MOD, KJV_HOLDOUT_REM = 20, 7  # chapter number (global, 0-based) % 20 == 7 is held out (~5%)
PY_HOLDOUT_MOD = 20  # crc32(relative path) % 20 == 0 is held out (~5%)

# The 66 books in canonical order, as the `bible` program names them in its chapter headers.
KJV_BOOKS = ["Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth", "1 Samuel",
             "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra", "Nehemiah", "Esther", "Job",
             "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon", "Isaiah", "Jeremiah", "Lamentations", "Ezekiel",
             "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk", "Zephaniah",
             "Haggai", "Zechariah", "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "1 Corinthians",
             "2 Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians", "1 Thessalonians",
             "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon", "Hebrews", "James", "1 Peter",
             "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation"]


def to_ascii(text):
    """Folds text to printable ASCII plus \\n and \\t (NFKD, then drop what is left), so that the tokenizer's
    pre-tokenizer regex is exact (see bpe.py). \\r and form feeds are dropped."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^\x20-\x7e\n\t]", "", text)


def kjv_chapters():
    """Yields (book, chapter, [(verse, text)]) for the whole Bible, from the `bible` program (package bible-kjv)."""
    out = subprocess.run(["bible", "-l100000", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    book, chap, verses = None, None, []
    head = re.compile(r"^(" + "|".join(re.escape(b) for b in KJV_BOOKS) + r") (\d+)$")
    for line in out.split("\n"):
        m = head.match(line.strip())
        if m:
            if verses:
                yield book, chap, verses
            book, chap, verses = m.group(1), int(m.group(2)), []
            continue
        m = re.match(r"^\s*(\d+) (.*)$", line)
        if m:
            verses.append((int(m.group(1)), to_ascii(m.group(2)).strip()))
        elif line.strip():
            raise RuntimeError("unexpected line in bible output: %r" % line)
    if verses:
        yield book, chap, verses


def chapter_text(book, chap, verses):
    return "%s %d\n\n" % (book, chap) + "".join("%d %s\n" % (v, t) for v, t in verses)


def py_files():
    """Sorted relative paths of the standard library's .py sources, minus PY_EXCLUDE."""
    paths = sorted(glob.glob(os.path.join(PY_ROOT, "**", "*.py"), recursive=True))
    rels = [os.path.relpath(p, PY_ROOT) for p in paths]
    return [r for r in rels if not any(x in r + "/" for x in PY_EXCLUDE) and not r.startswith("_sysconfigdata")]


def py_holdout(rel):
    return zlib.crc32(rel.encode()) % PY_HOLDOUT_MOD == 0


DEF_RE = re.compile(r'^def ([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\):\n    """([^\n"]+)', re.M)


def py_qa(rel, text):
    """Templated Q/A from module-level functions with a one-line docstring summary (template in datasets/README)."""
    mod = rel[:-3].replace("/", ".").replace(".__init__", "")
    out = []
    for m in DEF_RE.finditer(text):
        name, args, doc = m.group(1), m.group(2), m.group(3).strip()
        if name.startswith("_") or len(doc) < 12:
            continue
        out.append("Q: What does the function `%s.%s` do?\nA: %s\n" % (mod, name, doc))
        out.append("Q: What are the parameters of `%s.%s`?\nA: %s\n" % (mod, name, args if args else "none"))
    return out


def kjv_qa(book, chap, verses):
    out = []
    for v, t in verses:
        if v % 4 == 1:  # every fourth verse, to keep this part small
            out.append("Q: What does %s %d:%d say?\nA: %s\n" % (book, chap, v, t))
    return out


def build():
    os.makedirs(DATA, exist_ok=True)
    train, held = [], []
    # KJV: one document per book (its kept chapters); held-out chapters are their own documents.
    gidx = 0
    books = {}
    for book, chap, verses in kjv_chapters():
        dst = held if gidx % KJV_HOLDOUT_MOD == KJV_HOLDOUT_REM else None
        gidx += 1
        text = chapter_text(book, chap, verses)
        qa = kjv_qa(book, chap, verses)
        if dst is not None:
            held.append({"src": "kjv", "name": "%s %d" % (book, chap), "text": text})
            held.append({"src": "qa", "name": "kjv %s %d" % (book, chap), "text": "\n".join(qa)})
        else:
            books.setdefault(book, []).append(text)
            train.append({"src": "qa", "name": "kjv %s %d" % (book, chap), "text": "\n".join(qa)})
    for book in KJV_BOOKS:
        train.append({"src": "kjv", "name": book, "text": "\n".join(books[book])})
    if gidx != 1189:
        raise RuntimeError("expected 1189 chapters, got %d" % gidx)
    for rel in py_files():
        with open(os.path.join(PY_ROOT, rel), encoding="utf-8", errors="replace") as f:
            text = to_ascii(f.read())
        if len(text.strip()) < 200:
            continue
        dst = held if py_holdout(rel) else train
        dst.append({"src": "py", "name": rel, "text": text})
        qa = py_qa(rel, text)
        if qa:
            dst.append({"src": "qa", "name": "py " + rel, "text": "\n".join(qa)})
    train = [d for d in train if d["text"].strip()]
    held = [d for d in held if d["text"].strip()]
    for name, docs in (("train", train), ("heldout", held)):
        with open(os.path.join(DATA, name + ".jsonl"), "w") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
        sizes = {}
        for d in docs:
            sizes[d["src"]] = sizes.get(d["src"], 0) + len(d["text"])
        print("%s: %d documents, bytes by source %s" % (name, len(docs), sizes))


if __name__ == "__main__":
    sys.exit(build())
