#!/usr/bin/python3
"""The documentation holds together: README.md stays short, every relative link and image
in README.md and docs/*.md resolves to a file of the repository (and a #anchor to a heading
of that file, as GitHub makes its anchors), and no tracked file or folder is named after a
work item ("issue") rather than after what it holds.

Run from anywhere: python3 scripts/tests/test_docs.py (ctest -L unit runs it)."""

import glob
import os
import re
import subprocess
import tempfile
import unittest
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README_MAX_LINES = 150

# [text](target) and ![alt](target); the target ends at whitespace or ')' (an optional
# "title" may follow). Code spans and fenced blocks are removed first: their brackets are code.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def docs():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def links(text):
    """The link targets of Markdown text, outside code."""
    return LINK.findall(CODE_SPAN.sub("", FENCE.sub("", text)))


def slug(heading):
    """GitHub's anchor for a heading: lower case, inline markup and punctuation dropped
    (letters, digits, '_' and '-' kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path):
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 ... for repeats."""
    seen, out = {}, set()
    for line in FENCE.sub("", read(path)).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def broken_links(path, root=ROOT):
    """'target: why' for each relative link of `path` that does not resolve inside `root`."""
    bad = []
    for target in links(read(path)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: — not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), unquote(file_part))) if file_part else path
        if not os.path.realpath(dest).startswith(os.path.realpath(root) + os.sep):
            bad.append(f"{target}: outside the repository")
        elif not os.path.exists(dest):
            bad.append(f"{target}: no such file")
        elif anchor:
            if os.path.isdir(dest) or not dest.endswith(".md"):
                bad.append(f"{target}: an anchor into something that is not a Markdown file")
            elif unquote(anchor).lower() not in anchors(dest):
                bad.append(f"{target}: no heading with that anchor")
    return bad


class Docs(unittest.TestCase):
    def test_readme_is_short(self):
        n = len(read(os.path.join(ROOT, "README.md")).splitlines())
        self.assertLessEqual(n, README_MAX_LINES, f"README.md has {n} lines; the rest belongs in docs/")

    def test_links_resolve(self):
        self.assertTrue(os.path.isdir(os.path.join(ROOT, "docs")), "docs/ is missing")
        problems = [f"{os.path.relpath(p, ROOT)}: {b}" for p in docs() for b in broken_links(p)]
        self.assertEqual(problems, [], "broken links:\n" + "\n".join(problems))

    def test_no_work_item_names(self):
        try:
            files = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True,
                                   check=True).stdout.splitlines()
        except (OSError, subprocess.CalledProcessError):
            self.skipTest("not a git checkout")
        named = [f for f in files if "issue" in f.lower()]
        self.assertEqual(named, [], "name files and folders after what they hold (host, suite, date)")


class Checker(unittest.TestCase):
    """The checker itself: it must see a broken link, and only a broken one."""

    def test_slugs(self):
        self.assertEqual(slug("`run`: the benchmark"), "run-the-benchmark")
        self.assertEqual(slug("`cpu` — our own CPU kernels (`kernels/cpu/`)"), "cpu--our-own-cpu-kernels-kernelscpu")
        self.assertEqual(slug("Nothing is lost: interrupts and `--resume`"), "nothing-is-lost-interrupts-and---resume")

    def test_links_outside_code_only(self):
        text = "[a](x.md) ![i](p.png \"t\") `[no](code.md)`\n```\n[no](fence.md)\n```\n[b](y.md#z) [w](https://e.org)"
        self.assertEqual(links(text), ["x.md", "p.png", "y.md#z", "https://e.org"])

    def test_a_broken_link_is_reported(self):
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "docs"))
            with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
                f.write("# Top\n\n## Two `words`\n")
            doc = os.path.join(root, "docs", "a.md")
            with open(doc, "w", encoding="utf-8") as f:
                f.write("# Here\n\n[ok](../README.md#two-words) [self](#here) [gone](no-such-file.md) "
                        "[anchor](../README.md#no-such-heading) [up](../../outside.md)\n")
            bad = broken_links(doc, root)
        self.assertEqual([b.split(":")[0] for b in bad],
                         ["no-such-file.md", "../README.md#no-such-heading", "../../outside.md"])


if __name__ == "__main__":
    unittest.main()
