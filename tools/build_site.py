"""The course as a static website, from the notebooks tools/course.py has just executed.

Repository tooling: ``python tools/build_site.py --run build`` (what ``make site`` runs after
``make course``) writes ``build/site/``, a folder any web host serves as it is. Sphinx with
MyST-NB and sphinx-book-theme (the ``site`` extra of pyproject.toml), offline:

- nothing is executed again (MyST-NB ``nb_execution_mode = "off"``): each lesson is the
  executed copy course.py saved under ``<run>/notebooks/``; an exercise or a solution is the
  executed copy when that run executed it (``<run>/summary.json`` lists what it ran), else the
  repository's notebook as a learner opens it;
- the README is the home page; the lessons the run executed come in reading order, each with
  its exercises and its solutions beneath it in the sidebar (and so in previous/next); then the
  glossary, the run's summary (each notebook's status, time and headline figures), and
  docs/MEASURED.md as an appendix;
- the sources are copied into a staging folder (``<run>/site-src/``) laid out like the
  repository, so the relative links between them resolve as they do on GitHub. A link to a
  file that is not a page of this site (CONTRIBUTING.md, a folder, a lesson this run did not
  execute, ``tflearn_helpers/...``) is rewritten to the repository's copy on GitHub; links to
  README.md point to the home page;
- warnings are errors (``-W``): a link or an anchor that does not resolve fails the build;
- math is rendered by MathJax 3 served from the site itself (copied from the
  sphinx-mathjax-offline package), not from a CDN: neither the build nor a reader needs the
  network; search is Sphinx's own index (``searchindex.js``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbtools  # tools/nbtools.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = f"https://github.com/{nbtools.repo_slug()}"  # what stamp_headers.py repoints
LINK = re.compile(r"(\]\()([^)\s]+)(\))")  # a Markdown link's target
FOLDERS = ("notebooks", "exercises", "solutions")
MATHJAX_PARTS = ("tex-chtml.js", "input/tex/extensions", "output/chtml/fonts", "ui", "a11y")


def executed(run: Path) -> set[str]:
    """The notebooks (``folder/name.ipynb``) the run in ``run`` executed, from its summary."""
    summary = run / "summary.json"
    if not summary.exists():
        raise SystemExit(f"{summary} is missing: run tools/course.py --out {run} first")
    return {r["notebook"] for r in json.loads(summary.read_text()) if r["status"] != "skipped"}


def pages(run: Path, root: Path = ROOT) -> dict[str, Path]:
    """Each page of the site (its path in the staging folder) -> the file it is made from."""
    ran = executed(run)
    lessons = sorted(p.name for p in (root / "notebooks").glob("*.ipynb"))
    chosen = {"index.md": root / "README.md"}
    for name in lessons:
        if f"notebooks/{name}" not in ran:
            continue
        chosen[f"notebooks/{name}"] = run / "notebooks" / name
        for folder in ("exercises", "solutions"):
            if (root / folder / name).exists():
                where = run if f"{folder}/{name}" in ran else root
                chosen[f"{folder}/{name}"] = where / folder / name
    chosen["docs/GLOSSARY.md"] = root / "docs" / "GLOSSARY.md"
    chosen["runs.md"] = run / "summary.json"
    chosen["docs/MEASURED.md"] = root / "docs" / "MEASURED.md"
    return chosen


def headings(text: str) -> dict[str, str]:
    """The headings of a Markdown text: JupyterLab's anchor for each (its text, spaces made
    dashes) -> the site's (MyST's GitHub-style slug)."""
    from myst_parser.slugs import github_slugify

    found, fenced = {}, False
    for line in text.splitlines():
        fenced ^= line.lstrip().startswith("```")
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", m[1]).replace("`", "")
            found[title.replace(" ", "-")] = github_slugify(title)
    return found


def rewrite_link(target: str, page: str, site: dict[str, dict[str, str]]) -> str:
    """A relative link of ``page`` (a staging path) that resolves on this site, or the same
    file in the repository on GitHub. ``site``: each page -> its headings (``headings``): an
    anchor written as JupyterLab makes them becomes the site's."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return target  # a web address, mailto:
    if target.startswith("#"):  # an anchor on the same page
        return "#" + site[page].get(target[1:], target[1:])
    path, _, anchor = target.partition("#")
    source_dir = Path("." if page == "index.md" else page).parent  # README.md sits at the root
    resolved = Path(_normalise(source_dir / path))
    if str(resolved) == "README.md":
        resolved = Path("index.md")
    if str(resolved) in site:
        anchor = site[str(resolved)].get(anchor, anchor)
        rel = _relative(resolved, Path(page).parent)
        return rel + (f"#{anchor}" if anchor else "")
    kind = "tree" if path.endswith("/") or not resolved.suffix else "blob"
    return f"{REPOSITORY}/{kind}/main/{resolved}" + (f"#{anchor}" if anchor else "")


def _normalise(path: Path) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def _relative(target: Path, start: Path) -> str:
    up = len([p for p in start.parts if p != "."])
    return "/".join([".."] * up + [str(target)])


def rewrite_markdown(text: str, page: str, site: dict[str, dict[str, str]]) -> str:
    return LINK.sub(lambda m: m[1] + rewrite_link(m[2], page, site) + m[3], text)


def runs_page(run: Path, site) -> str:
    """The run's summary (course.py's summary.json) as a Markdown page."""
    results = json.loads((run / "summary.json").read_text())
    total = sum(r["seconds"] for r in results)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime((run / "summary.json").stat().st_mtime))
    lines = [
        "# The run this site shows",
        "",
        f"Every notebook below was executed by `tools/course.py` ({stamp}, {total:.0f} s in all);"
        " the site shows the outputs of that run.",
        "",
        "| notebook | status | time | headline figures |",
        "| --- | --- | --- | --- |",
    ]
    for r in results:
        name = r["notebook"]
        cell = f"[{name}]({name})" if name in site else f"`{name}`"
        status = r["status"] + (f": {r['error']}" if r.get("error") else "")
        figures = "<br>".join(f"{h['label']}: {h['value']}" for h in r.get("headlines", []))
        row = [cell, status, f"{r['seconds']:.0f} s", figures or "none"]
        lines.append(
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in row) + " |"
        )
    return "\n".join(lines) + "\n"


def stage(run: Path, staging: Path, root: Path = ROOT) -> list[str]:
    """Copy every page into ``staging`` with its links rewritten; the pages, in order."""
    import nbformat

    shutil.rmtree(staging, ignore_errors=True)
    chosen = pages(run, root)
    site = {page: headings(_markdown(source)) for page, source in chosen.items()}
    for page, source in chosen.items():
        out = staging / page
        out.parent.mkdir(parents=True, exist_ok=True)
        if page == "runs.md":
            out.write_text(runs_page(run, site))
        elif page.endswith(".md"):
            out.write_text(rewrite_markdown(source.read_text(), page, site))
        else:
            nb = nbformat.read(source, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = rewrite_markdown(cell.source, page, site)
            if page.startswith("notebooks/"):
                name = Path(page).name
                beneath = [f"../{f}/{name[:-6]}" for f in FOLDERS[1:] if f"{f}/{name}" in site]
                if beneath:  # exercises, then solutions, beneath their lesson
                    nb.cells.append(nbformat.v4.new_markdown_cell(_toctree(beneath)))
            nbformat.write(nb, str(out))
    lessons = [p[:-6] for p in chosen if p.startswith("notebooks/")]
    home = (staging / "index.md").read_text()
    home += "\n" + _toctree(lessons, "Lessons")
    home += _toctree(["docs/GLOSSARY", "runs"], "Reference")
    home += _toctree(["docs/MEASURED"], "Appendix")
    (staging / "index.md").write_text(home)
    (staging / "conf.py").write_text(CONF)
    (staging / "favicon.svg").write_text(FAVICON)
    return list(chosen)


def _markdown(source: Path) -> str:
    """The Markdown of a page's source: a .md file, or a notebook's Markdown cells."""
    if source.suffix == ".md":
        return source.read_text()
    if source.suffix == ".ipynb":
        cells = json.loads(source.read_text())["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return ""


def _toctree(entries: list[str], caption: str = "") -> str:
    head = "```{toctree}\n:hidden:\n" + (f":caption: {caption}\n" if caption else "")
    return head + "\n".join(entries) + "\n```\n"


CONF = """\
# Written by tools/build_site.py: the Sphinx configuration of the course's website.
from pathlib import Path

project = "tflearn"
author = "the tflearn course"
extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["_build"]
nb_execution_mode = "off"  # the notebooks were executed by tools/course.py, never here
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4  # ../README.md#start and the like resolve to the heading
html_theme = "sphinx_book_theme"
html_title = "tflearn: distributed training in TensorFlow"
html_theme_options = {
    "repository_url": "@REPOSITORY@",
    "use_repository_button": True,
    "use_download_button": True,  # each page's .ipynb (executed) or .md, to download
    "show_navbar_depth": 1,
    "navigation_with_keys": True,
}
html_last_updated_fmt = None
html_context = {"default_mode": "auto"}  # unset, the theme logs an error on a first visit
html_favicon = "favicon.svg"  # else every browser asks for /favicon.ico, and gets a 404
nitpicky = True  # every cross-reference must resolve (with -W: or the build fails)
# The one kind of warning let through: Pygments cannot lex a %%writefile cell (a shell or
# Python file behind an IPython cell magic) as the notebook's language; it shows it unlit.
suppress_warnings = ["misc.highlighting_failure"]
# MathJax 3 from the site itself (sphinx-mathjax-offline ships it): no CDN while reading.
mathjax_path = "mathjax/tex-chtml.js"
MATHJAX_PARTS = @PARTS@


def _copy_mathjax(app, exc):
    import importlib.util
    import shutil

    if exc is not None:
        return
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    source = Path(spec.origin).parent / "static" / "mathjax"
    for part in MATHJAX_PARTS:
        src, dst = source / part, Path(app.outdir) / "_static" / "mathjax" / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst)


def setup(app):
    app.connect("build-finished", _copy_mathjax)
""".replace("@REPOSITORY@", REPOSITORY).replace("@PARTS@", repr(MATHJAX_PARTS))


FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32"'
    ' rx="6" fill="#ff6f00"/><text x="16" y="22" font-family="sans-serif" font-size="15"'
    ' font-weight="bold" text-anchor="middle" fill="#fff">tf</text></svg>\n'
)


def build(run: Path, out: Path, root: Path = ROOT, quiet: bool = True) -> list[str]:
    """Stage the pages of ``run`` and build the site into ``out``; the pages, in order."""
    staging = run / "site-src"
    chosen = stage(run, staging, root)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n"]
    cmd += ["-d", str(run / "site-doctrees"), str(staging), str(out)] + (["-q"] if quiet else [])
    subprocess.run(cmd, check=True, timeout=1800)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/build_site.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", default="build", help="what course.py --out wrote (build)")
    parser.add_argument("--out", help="the site's folder (default: <run>/site)")
    args = parser.parse_args(argv)
    run = Path(args.run).resolve()
    out = Path(args.out).resolve() if args.out else run / "site"
    try:
        chosen = build(run, out)
    except subprocess.CalledProcessError as e:
        print(f"the site did not build (sphinx exited {e.returncode}): see its messages above")
        return 1
    print(f"site: {out / 'index.html'} ({len(chosen)} pages; a static folder, any host serves it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
