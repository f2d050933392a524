#!/usr/bin/env python3
"""Citations of the design pages stay true (docs/architecture.md §7).

usage: docs_links_test.py [SOURCE_ROOT]

Walks src/, tests/, tools/, fuzz/ (not its corpora), docs/, dist/, debian/, README.md and the top-level meson
files, and fails, naming file and line, when a file
  - points outside the repository at the design notes the project began from (the `shared`
    directory beside the checkout), or names one of them (`agent-semantics`, `platform-notes`, or a design
    page without its `docs/` directory);
  - cites `docs/X.md` (or, inside docs/, links `X.md`) and that file does not exist;
  - cites a section, `docs/X.md §4.6` (also `§3.2 and §4.1`, `§1/§6`), that has no heading
    `## 4.` / `### 4.6` in that page; inside a docs page a bare `§N` is a section of the page
    itself.
Section numbers are the contract that lets code comments cite the docs; this keeps them honest
as pages and comments change.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SELF = os.path.abspath(__file__)
TOP_FILES = ["README.md", "meson.build", "meson_options.txt"]
TREES = ["src", "tests", "tools", "fuzz", "docs", "dist", "debian"]
SKIP_DIRS = {"node_modules", ".git", "corpus", "regressions", "__pycache__"}
TEXT_EXT = {".cc", ".h", ".c", ".py", ".sh", ".mjs", ".js", ".md", ".tsv", ".build", ".txt", ".dict",
            ".html", ".css", ".json", ".wrap", ".in", ""}

FORBIDDEN = [
    # Written with a class so that a grep of the tree for the old paths does not find this line.
    (re.compile(r"\.\./sh[a]red|sh[a]red/design"), "points outside the repository (the shared design notes)"),
    (re.compile(r"agent-semantics"), "names agent-semantics, which is not in the repository: cite docs/agent.md"),
    (re.compile(r"platform-notes"), "names platform-notes, which is not in the repository"),
]
PAGE_TOKEN = re.compile(r"[\w./-]*\b(protocol|sandbox|agent|architecture|performance|design|benchmarks|reliability|"
                        r"agent-semantics|platform-notes)\.md\b")
DOCS_TOKEN = re.compile(r"(?<![\w.-])docs/[\w./-]+\.md\b")
MD_LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#[^)]*)?\)")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
SEPARATOR = re.compile(r"(?:\s|,|;|/|&|–|-|\band\b|\bor\b)*")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s")

_sections = {}


def sections(page_path):
    """The section numbers of a docs page, from its numbered headings."""
    if page_path not in _sections:
        found = set()
        with open(page_path, encoding="utf-8", errors="replace") as f:
            in_fence = False
            for line in f:
                if line.startswith("```"):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    found.add(m.group(1))
        _sections[page_path] = found
    return _sections[page_path]


def cited_sections(text, pos):
    """The `§N` run that starts at `pos` (after optional blanks): §3.2 and §4.1, §1/§6 …"""
    out = []
    m = re.compile(r"\s*").match(text, pos)
    pos = m.end()
    while True:
        s = SECTION.match(text, pos)
        if not s:
            return out
        out.append(s.group(1))
        pos = s.end()
        sep = SEPARATOR.match(text, pos)
        if not SECTION.match(text, sep.end()):
            return out
        pos = sep.end()


def files():
    for name in TOP_FILES:
        path = os.path.join(ROOT, name)
        if os.path.isfile(path):
            yield path
    for tree in TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build"))
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if os.path.abspath(path) == SELF or os.path.splitext(name)[1] not in TEXT_EXT:
                    continue
                yield path


def check_file(path, problems):
    rel = os.path.relpath(path, ROOT)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (UnicodeDecodeError, OSError):
        return
    in_docs = rel.startswith("docs" + os.sep) and rel.endswith(".md")
    own = path if in_docs else None

    def report(lineno, what):
        problems.append(f"{rel}:{lineno}: {what}")

    def check_page(lineno, page_rel, line, end):
        page = os.path.join(ROOT, page_rel)
        if not os.path.isfile(page):
            report(lineno, f"cites {page_rel}, which does not exist")
            return
        for sec in cited_sections(line, end):
            if sec not in sections(page):
                report(lineno, f"cites {page_rel} §{sec}, which has no such section (no heading '{sec}')")

    in_fence = False
    for lineno, line in enumerate(lines, 1):
        if in_docs and line.startswith("```"):
            in_fence = not in_fence
        for rx, what in FORBIDDEN:
            if rx.search(line):
                report(lineno, what)
        consumed = []  # spans whose sections belong to a named page
        for m in DOCS_TOKEN.finditer(line):
            check_page(lineno, m.group(0), line, m.end())
            consumed.append((m.start(), m.end()))
        for m in PAGE_TOKEN.finditer(line):
            token = m.group(0)
            if any(m.start() < b and a < m.end() for a, b in consumed):
                continue
            if in_docs and "/" not in token:
                # A page beside this one: a link target or a mention, e.g. [agent.md](agent.md) §2.3.
                check_page(lineno, os.path.join("docs", token), line, m.end())
                consumed.append((m.start(), m.end()))
                continue
            if m.group(1) in ("agent-semantics", "platform-notes"):
                continue  # reported above: not in the repository at all
            if token.startswith(("src/", "tests/", "tools/", "fuzz/")) or "/page/" in token:
                continue  # a README of some folder, not a design page
            report(lineno, f"cites {token}: design pages are cited as docs/{m.group(1)}.md")
        if in_docs:
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if "/" in target or target.startswith("."):
                    resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
                    if not os.path.exists(os.path.join(ROOT, resolved)):
                        report(lineno, f"links {target}, which does not exist")
                    continue
                # Sections after the link's closing parenthesis belong to the linked page.
                check_page(lineno, os.path.join("docs", target), line, m.end())
                consumed.append((m.start(), m.end()))
            if not in_fence:
                # A bare § in a docs page is a section of that page.
                for m in SECTION.finditer(line):
                    run_start = m.start()
                    if any(a <= run_start and _belongs(line, b, run_start) for a, b in consumed):
                        continue
                    if m.group(1) not in sections(own):
                        report(lineno, f"§{m.group(1)} is not a section of this page")


def _belongs(line, end, start):
    """Whether the § at `start` is part of the section run right after a page citation ending at `end`."""
    pos = end
    while pos <= start:
        m = re.compile(r"\s*").match(line, pos)
        pos = m.end()
        s = SECTION.match(line, pos)
        if not s:
            return False
        if s.start() == start:
            return True
        pos = SEPARATOR.match(line, s.end()).end()
    return False


def main():
    problems = []
    n = 0
    for path in files():
        n += 1
        check_file(path, problems)
    for p in problems:
        print(p)
    print(f"docs_links_test: {n} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
