"""Rewrite every notebook's Colab badge and Colab install line from REPO_SLUG.

An instructor who forks the course repoints everything at the fork with one command:
``python tools/stamp_headers.py --slug my-org/my-course`` sets REPO_SLUG, the project URL
and the README's install line, then restamps every notebook.

Usage: python tools/stamp_headers.py [--check | --slug OWNER/NAME]
"""

from __future__ import annotations

import re
import sys

from nbtools import ROOT, course_notebooks, read, repo_slug, stamp, write

SLUG_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# Files that name the repository outside the notebooks (REPO_SLUG's own line included).
SLUG_FILES = ("tflearn_helpers/__init__.py", "pyproject.toml", "README.md", "CONTRIBUTING.md")


def set_slug(new: str) -> None:
    """Point the course at github.com/<new>: REPO_SLUG and every file that names it."""
    if not SLUG_RE.match(new):
        raise SystemExit(f"--slug takes OWNER/NAME as on GitHub (e.g. my-org/tflearn), got {new!r}")
    old = repo_slug()
    for name in SLUG_FILES:
        path = ROOT / name
        text = path.read_text()
        text = text.replace(f'REPO_SLUG = "{old}"', f'REPO_SLUG = "{new}"')
        path.write_text(text.replace(f"github.com/{old}", f"github.com/{new}"))


def main(argv: list[str]) -> int:
    if "--slug" in argv:
        i = argv.index("--slug")
        if i + 1 >= len(argv):
            raise SystemExit("--slug needs OWNER/NAME")
        set_slug(argv[i + 1])
    stale = []
    for path in course_notebooks():
        nb = read(path)
        if stamp(nb, path):
            stale.append(path.relative_to(ROOT))
            if "--check" not in argv:
                write(nb, path)
    verb = "out of date" if "--check" in argv else "restamped"
    for p in stale:
        print(f"{verb}: {p}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
