"""Rewrite every notebook's Colab badge and Colab install line from REPO_SLUG.

Usage: python tools/stamp_headers.py [--check]
"""

from __future__ import annotations

import sys

from nbtools import ROOT, course_notebooks, read, stamp, write


def main(argv: list[str]) -> int:
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
