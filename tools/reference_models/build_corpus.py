#!/usr/bin/env python3
"""Build the reference models' training corpus from English text that Debian packages ship.

Usage:
    python3 tools/reference_models/build_corpus.py --out .device_inputs/refmodels [--work /tmp/refcorpus]

Downloads the packages listed in SOURCES with `apt-get download` (nothing is installed: each .deb
is unpacked with `dpkg-deb -x` into --work), extracts plain text, cuts it into documents and
splits whole documents into train and held-out sets by a hash of (source, document name), so the
split is stable when sources are added. Writes, under --out:
    train.jsonl.xz    {"src": ..., "doc": ..., "text": ...} one document per line
    heldout.jsonl.xz  same, never used for training (cloze task, held-out perplexity)
    corpus_stats.json bytes and documents per source and split
Nothing from the evaluation data (../shared/data) is read here.
Standard library only (Python 3.11); needs apt-get and dpkg-deb.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import html.parser
import json
import lzma
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

HELDOUT_PERCENT = 3  # of documents (by hash), per source
# Per-source cap in bytes of text: keeps the big technical manuals from drowning the prose.
DEFAULT_CAP = 40_000_000

# name -> (packages, extractor, cap)
SOURCES = {
    "kjv": (["bible-kjv", "bible-kjv-text"], "bible", None),
    "austen": (["r-cran-janeaustenr"], "austen", None),
    "gcide": (["dict-gcide"], "dictd:gcide", 22_000_000),
    "foldoc": (["dict-foldoc"], "dictd:foldoc", None),
    "devil": (["dict-devil"], "dictd:devil", None),
    "vera": (["dict-vera"], "dictd:vera", None),
    "elements": (["dict-elements"], "dictd:elements", None),
    "wordnet": (["wordnet-base"], "wordnet", None),
    "jargon": (["jargon-text"], "gztext:jargon.txt.gz", None),
    "fortunes": (["fortunes", "fortunes-min", "fortunes-bofh-excuses"], "fortunes", None),
    "debian-reference": (["debian-reference-en"], "html:.en.html", None),
    "debian-handbook": (["debian-handbook"], "html:/en-US/", None),
    "developers-reference": (["developers-reference"], "html:.html", None),
    "maint-guide": (["maint-guide"], "html:.en.html", None),
    "debian-faq": (["debian-faq"], "html:.en.html", None),
    "debian-policy": (["debian-policy"], "html:.html", None),
    "gnu-standards": (["gnu-standards"], "gztext:.text.gz", None),
    "python-docs": (["python3.11-doc"], "text:.rst.txt", None),
    "django-docs": (["python-django-doc"], "html:.html", 15_000_000),
    "postgresql-docs": (["postgresql-doc-15"], "html:.html", 15_000_000),
    "sqlite-docs": (["sqlite3-doc"], "html:.html", 8_000_000),
    "git-docs": (["git-doc"], "text:.txt", None),
    "bash-docs": (["bash-doc"], "html:bashref.html", None),
    "perl-docs": (["perl-doc"], "pod", 15_000_000),
    "linux-docs": (["linux-doc-6.1"], "gztext:.rst.gz", 25_000_000),
}


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def fetch(packages: list[str], work: Path) -> Path:
    """Downloads and unpacks packages into work/x/<first package>; returns that folder."""
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    dest = work / "x" / packages[0]
    if dest.exists():
        return dest
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        run(["apt-get", "download", *missing], cwd=debs, stdout=subprocess.DEVNULL)
    tmp = dest.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for p in packages:
        (deb,) = list(debs.glob(f"{p}_*.deb"))
        run(["dpkg-deb", "-x", str(deb), str(tmp)])
    tmp.rename(dest)
    return dest


def norm_ws(text: str) -> str:
    """Collapses runs of blank lines and trailing spaces; keeps paragraph breaks."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return out.strip()


def group(entries: list[str], name: str, per_doc: int, sep: str = "\n\n"):
    """Dictionary-like sources: consecutive entries form one document (the split unit)."""
    for i in range(0, len(entries), per_doc):
        yield f"{name}#{i // per_doc}", sep.join(entries[i:i + per_doc])


# ---- extractors: each yields (doc name, text) ----

def ex_bible(root: Path, _arg):
    exe = root / "usr/bin/bible"
    out = run([str(exe), "-f", "-p", str(root / "usr/lib"), "Gen1:1-Rev22:21"],
              stdin=subprocess.DEVNULL, capture_output=True).stdout.decode("utf-8", "replace")
    books: dict[str, list[str]] = {}
    chapter_of: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        book, chap, verse = m.group(1), m.group(2), m.group(4)
        lst = books.setdefault(book, [])
        if chapter_of.get(book) != chap:
            chapter_of[book] = chap
            lst.append(f"\n\nChapter {chap}.\n")
        lst.append(verse)
    for book, parts in books.items():
        yield book.strip(), norm_ws(" ".join(parts).replace("\n ", "\n"))


def _r_strings(blob: bytes) -> list[str | None]:
    """All CHARSXPs of an R XDR serialization, in order (None = NA). Scans rather than parses."""
    out, i, n = [], 0, len(blob)
    while i + 8 <= n:
        flags = struct.unpack_from(">i", blob, i)[0]
        if flags & 0xFF == 9 and (flags >> 12) in (0, 1, 2, 4, 8, 64):
            ln = struct.unpack_from(">i", blob, i + 4)[0]
            if ln == -1:
                out.append(None)
                i += 8
                continue
            if 0 <= ln <= 100_000 and i + 8 + ln <= n:
                try:
                    out.append(blob[i + 8:i + 8 + ln].decode("utf-8"))
                    i += 8 + ln
                    continue
                except UnicodeDecodeError:
                    pass
        i += 1
    return out


def ex_austen(root: Path, _arg):
    rdb = next(root.rglob("data/Rdata.rdb")).read_bytes()
    # A lazy-load database: objects are zlib streams, each after a 4-byte length.
    novels = []
    i = 0
    while i < len(rdb) - 6:
        if rdb[i + 4] == 0x78:
            try:
                d = zlib.decompressobj()
                raw = d.decompress(rdb[i + 4:])
                if d.eof:
                    novels.append(raw)
                    i += 4 + len(rdb[i + 4:]) - len(d.unused_data)
                    continue
            except zlib.error:
                pass
        i += 1
    for k, raw in enumerate(novels):
        lines = [s for s in _r_strings(raw) if s is not None]
        if len(lines) < 1000:  # skip small objects (names, attributes)
            continue
        title = next((s for s in lines if s.strip()), f"novel{k}").strip()
        text = "\n".join(lines)
        # Re-flow: lines within a paragraph are joined; blank lines separate paragraphs.
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
        yield title, "\n\n".join(p for p in paras if p)


DICTD_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64num(s: str) -> int:
    v = 0
    for ch in s:
        v = v * 64 + DICTD_B64.index(ch)
    return v


def ex_dictd(root: Path, name: str):
    data = gzip.decompress((next(root.rglob(f"{name}.dict.dz"))).read_bytes())
    spans = set()
    for line in next(root.rglob(f"{name}.index")).read_text("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and not parts[0].startswith("00database") and not parts[0].startswith("00-database"):
            spans.add((_b64num(parts[1]), _b64num(parts[2])))
    entries = []
    for off, ln in sorted(spans):
        t = data[off:off + ln].decode("utf-8", "replace")
        if t.lstrip().startswith(("00-database", "00database")):
            continue
        # dictd layout wraps and indents bodies; re-flow each paragraph onto one line.
        paras = re.split(r"\n\s*\n", t)
        entries.append("\n".join(" ".join(p.split()) for p in paras if p.strip()))
    yield from group(entries, name, 200)


def ex_wordnet(root: Path, _arg):
    entries = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (next(root.rglob(f"data.{pos}"))).read_text("utf-8", "replace").splitlines():
            if line.startswith(" ") or " | " not in line:
                continue
            head, gloss = line.split(" | ", 1)
            f = head.split()
            words = [f[4 + 2 * j].replace("_", " ") for j in range(int(f[3], 16))]
            words = [re.sub(r"\([a-z]+\)$", "", w) for w in words]
            entries.append(f"{', '.join(words)}: {gloss.strip()}")
    yield from group(entries, "wordnet", 300, "\n")


def ex_fortunes(root: Path, _arg):
    for f in sorted((root / "usr/share/games/fortunes").iterdir()):
        if f.suffix or f.is_dir():
            continue
        items = [norm_ws(t) for t in f.read_text("utf-8", "replace").split("\n%\n")]
        yield from group([t for t in items if t], f"fortunes/{f.name}", 100)


class _HtmlText(html.parser.HTMLParser):
    BLOCK = {"p", "div", "br", "li", "dt", "dd", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
             "pre", "table", "section", "blockquote", "ul", "ol", "dl", "title"}
    SKIP = {"script", "style", "head", "nav"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        if tag == "pre" and self.pre:
            self.pre -= 1
        if tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(src: str) -> str:
    p = _HtmlText()
    p.feed(src)
    return norm_ws(re.sub(r"[ \t]+\n", "\n", "".join(p.parts)).replace("\n ", "\n"))


def _files(root: Path, pattern: str):
    return sorted(f for f in root.rglob("*") if f.is_file() and pattern in str(f)
                  and (pattern.startswith("/") or str(f).endswith(pattern)))


def ex_html(root: Path, pattern: str):
    for f in _files(root, pattern):
        if pattern.startswith("/") and not f.name.endswith(".html"):
            continue
        yield str(f.relative_to(root)), html_to_text(f.read_text("utf-8", "replace"))


def ex_text(root: Path, suffix: str):
    for f in _files(root, suffix):
        yield str(f.relative_to(root)), norm_ws(f.read_text("utf-8", "replace"))


def ex_gztext(root: Path, suffix: str):
    for f in _files(root, suffix):
        yield str(f.relative_to(root)), norm_ws(gzip.decompress(f.read_bytes()).decode("utf-8", "replace"))


def ex_pod(root: Path, _arg):
    for f in sorted(root.rglob("*.pod")):
        text = f.read_text("utf-8", "replace")
        text = re.sub(r"^=(pod|cut|begin|end|for|encoding).*$", "", text, flags=re.M)
        text = re.sub(r"^=(head\d|item)\s*", "", text, flags=re.M)
        text = re.sub(r"[A-Z]<<+\s*(.*?)\s*>>+", r"\1", text)
        for _ in range(3):
            text = re.sub(r"[A-Z]<([^<>]*)>", r"\1", text)
        yield f.name, norm_ws(text)


EXTRACTORS = {"bible": ex_bible, "austen": ex_austen, "dictd": ex_dictd, "wordnet": ex_wordnet,
              "fortunes": ex_fortunes, "html": ex_html, "text": ex_text, "gztext": ex_gztext,
              "pod": ex_pod}


def is_heldout(src: str, doc: str) -> bool:
    h = int(hashlib.sha1(f"{src}\0{doc}".encode()).hexdigest()[:8], 16)
    return h % 100 < HELDOUT_PERCENT


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--work", default=Path("/tmp/refcorpus"), type=Path)
    ap.add_argument("--only", nargs="*", help="restrict to these source names (for testing)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stats = {}
    seen: set[bytes] = set()  # some packages ship one document twice; keep the first copy only
    writers = {s: lzma.open(args.out / f"{s}.jsonl.xz", "wt", encoding="utf-8", preset=6)
               for s in ("train", "heldout")}
    for name, (pkgs, ex, cap) in SOURCES.items():
        if args.only and name not in args.only:
            continue
        root = fetch(pkgs, args.work)
        kind, _, arg = ex.partition(":")
        cap = cap or DEFAULT_CAP
        st = {"packages": pkgs, "train_docs": 0, "heldout_docs": 0, "train_bytes": 0, "heldout_bytes": 0}
        total = 0
        for doc, text in EXTRACTORS[kind](root, arg):
            if len(text) < 200:
                continue
            digest = hashlib.sha1(text.encode("utf-8")).digest()
            if digest in seen:
                continue
            seen.add(digest)
            n = len(text.encode("utf-8"))
            if total + n > cap:
                break
            total += n
            split = "heldout" if is_heldout(name, doc) else "train"
            writers[split].write(json.dumps({"src": name, "doc": doc, "text": text}, ensure_ascii=False) + "\n")
            st[f"{split}_docs"] += 1
            st[f"{split}_bytes"] += n
        stats[name] = st
        print(f"{name:22s} train {st['train_bytes'] / 1e6:7.2f} MB ({st['train_docs']} docs)  "
              f"heldout {st['heldout_bytes'] / 1e6:6.2f} MB ({st['heldout_docs']} docs)", file=sys.stderr)
    for w in writers.values():
        w.close()
    tot = {k: sum(s[k] for s in stats.values()) for k in ("train_bytes", "heldout_bytes", "train_docs", "heldout_docs")}
    print(f"TOTAL {json.dumps(tot)}", file=sys.stderr)
    (args.out / "corpus_stats.json").write_text(json.dumps({"sources": stats, "total": tot}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
