#!/usr/bin/python3
# Builds the training corpus for Speculum's bundled models from Debian 12 packages: the King James Bible
# (bible-kjv-text, public domain), the Python 3.11 standard library sources (PSF licence), templated Q/A from both,
# the NumPy, SymPy and mpmath sources (BSD-3) and the SQLite documentation (sqlite3-doc, public domain).
# Output: tools/train/data/{train,heldout}.jsonl, one document per line {"src", "name", "text"}; ASCII only.
# The tokenizer is trained on the first three sources only (bpe.py TOKENIZER_SOURCES), so adding sources keeps it.
import glob
import html.parser
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
# Third-party Python libraries Debian installs with python3-torch (BSD-3 licensed), minus their test suites.
LIB_ROOT = "/usr/lib/python3/dist-packages"
LIB_PACKAGES = ("numpy", "sympy", "mpmath")
LIB_EXCLUDE = ("/tests/", "/testing/", "/benchmarks/", "__pycache__")
SQLITE_DOC = "/usr/share/doc/sqlite3"  # sqlite3-doc: the SQLite web site's HTML pages, public domain
SQLITE_NAV_END = "Search Documentation Search Changelog"

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


def lib_files():
    """Sorted paths (relative to LIB_ROOT) of the .py sources of LIB_PACKAGES, minus LIB_EXCLUDE."""
    out = []
    for pkg in LIB_PACKAGES:
        if not os.path.isdir(os.path.join(LIB_ROOT, pkg)):
            raise RuntimeError("%s is missing: scripts/install-deps.sh --dev" % os.path.join(LIB_ROOT, pkg))
        for p in sorted(glob.glob(os.path.join(LIB_ROOT, pkg, "**", "*.py"), recursive=True)):
            rel = os.path.relpath(p, LIB_ROOT)
            if not any(x in "/" + rel for x in LIB_EXCLUDE):
                out.append(rel)
    return out


class _HtmlText(html.parser.HTMLParser):
    """HTML -> plain text: block elements become line breaks, <pre> keeps its layout, scripts and styles vanish."""
    BLOCK = {"p", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "dt", "dd", "table", "ul", "ol",
             "blockquote", "hr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip, self.pre = [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "head"):
            self.skip += 1
        elif tag == "pre":
            self.pre += 1
            self.parts.append("\n")
        elif tag in self.BLOCK:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "head"):
            self.skip = max(0, self.skip - 1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.parts.append("\n")
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self):
        lines = [ln.rstrip() for ln in "".join(self.parts).split("\n")]
        out = re.sub(r"\n{3,}", "\n\n", "\n".join(ln if ln.strip() else "" for ln in lines))
        return out.strip() + "\n"


def sqlite_docs():
    """Yields (relative name, plain text) for every HTML page of the SQLite documentation, sorted by name."""
    paths = sorted(glob.glob(os.path.join(SQLITE_DOC, "**", "*.html"), recursive=True))
    if not paths:
        raise RuntimeError("%s has no HTML pages: scripts/install-deps.sh --dev (sqlite3-doc)" % SQLITE_DOC)
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            parser = _HtmlText()
            parser.feed(f.read())
        text = parser.text()
        nav = text.find(SQLITE_NAV_END)  # every page starts with the site's navigation menu: drop it
        yield os.path.relpath(p, SQLITE_DOC), to_ascii(text[nav + len(SQLITE_NAV_END):] if nav >= 0 else text).lstrip()


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
    for rel in lib_files():
        with open(os.path.join(LIB_ROOT, rel), encoding="utf-8", errors="replace") as f:
            text = to_ascii(f.read())
        if len(text.strip()) >= 200:
            (held if py_holdout(rel) else train).append({"src": "lib", "name": rel, "text": text})
    for rel, text in sqlite_docs():
        if len(text.strip()) >= 200:
            (held if py_holdout("sqlite/" + rel) else train).append({"src": "sql", "name": rel, "text": text})
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
