"""The course's website (tools/build_site.py), read in a real browser: headless Chromium.

The site is built from notebooks tools/course.py executed: the folder TFLEARN_SITE_RUN names
(what ``course.py --out`` wrote, ``build`` after ``make course``: the whole course), else lesson
06 alone, executed here at smoke (the quickest lesson that shows tables and teaches all-reduce;
its exercises and solutions then come unexecuted from the repository). It is served from
loopback, with every other host unreachable (the site must work offline), and the test checks
that:

- previous and next walk every page in reading order (home, each lesson then its exercises and
  its solutions, glossary, the run's summary, MEASURED) and back again;
- no page logs a console error from the site itself (the Colab badge's image, on Google's
  host, cannot load here: requests to other hosts are the only failures let through);
- every link, script, stylesheet and image of the site answers 200;
- each executed lesson shows an output it produced (a decoded image or a table), and a page
  with math shows it typeset by MathJax (served from the site);
- searching "all-reduce" finds every lesson of the site that names it (with the whole course:
  01 and 05 among them).

Cost: lesson 06 at smoke (24 s in CI's last run), the build (~5 s for its 6 pages), the browser
(~15 s); with the whole course (35 pages): build 13 s, browser ~50 s.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ONLY_LOOPBACK = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"  # Chromium reaches no other host
SEARCHED, TEACHING = "all-reduce", ("notebooks/01_mirrored_strategy", "notebooks/05_communication")

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.fail("chromium and chromium-driver are missing: run `make system-deps`", pytrace=False)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    given = os.environ.get("TFLEARN_SITE_RUN")
    if given:
        return Path(given).resolve()
    out = tmp_path_factory.mktemp("run")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "course.py"),
            "--out",
            str(out),
            "--scale",
            "smoke",
            "--only",
            "06_",
        ],
        check=False,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip; a lesson that failed is built too: its outputs are checked below
    return out


@pytest.fixture(scope="module")
def site(run, tmp_path_factory):
    """The built site served on loopback: (its address, its pages in reading order)."""
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    chosen = build_site.build(run, out)
    print(f"site built in {time.perf_counter() - start:.1f} s: {len(chosen)} pages")
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", chosen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # the browser moved on: fine
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-sync", "--disable-component-update",
                 "--window-size=1400,1000", f"--host-resolver-rules={ONLY_LOOPBACK}",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _page_url(base: str, page: str) -> str:
    return urljoin(base, "index.html" if page == "index.md" else page.rsplit(".", 1)[0] + ".html")


def _site_errors(browser, base: str) -> list[str]:
    """Console errors, less failed requests to other hosts (unreachable here on purpose)."""
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return [m for m in errors if not (m.startswith("http") and not m.startswith(base))]


def test_previous_and_next_walk_the_course_in_order_with_no_console_error(site, browser):
    base, chosen = site
    expected = [_page_url(base, p) for p in chosen]
    browser.get(expected[0])
    walked, errors = [browser.current_url], {}
    while True:
        errors[browser.current_url] = _site_errors(browser, base)
        nexts = browser.find_elements(By.CSS_SELECTOR, "a.right-next")
        if not nexts:
            break
        browser.get(nexts[0].get_attribute("href"))
        walked.append(browser.current_url)
        assert len(walked) <= len(expected), walked
    assert walked == expected
    for url in reversed(expected[1:]):
        browser.get(url)
        prev = browser.find_element(By.CSS_SELECTOR, "a.left-prev").get_attribute("href")
        assert prev == expected[expected.index(url) - 1]
    assert not any(errors.values()), {u: e for u, e in errors.items() if e}


def test_every_link_of_the_site_answers(site, browser):
    base, chosen = site
    targets = set()
    for page in chosen:
        browser.get(_page_url(base, page))
        targets |= set(
            browser.execute_script(
                "return [...document.querySelectorAll("
                "'a[href], link[href], script[src], img[src]')].map(e => e.href || e.src)"
            )
        )
    ours = {urldefrag(t).url for t in targets if t.startswith(base)}
    assert len(ours) > len(chosen)
    broken = {}
    for url in sorted(ours):
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                status = answer.status
        except urllib.error.HTTPError as e:
            status = e.code
        if status != 200:
            broken[url] = status
    assert not broken, broken
    outside = {urlparse(t).netloc for t in targets} - {urlparse(base).netloc, ""}
    assert "colab.research.google.com" in outside  # each notebook page keeps its Colab badge


def test_each_executed_lesson_shows_its_outputs_and_math_is_typeset(site, run, browser):
    base, chosen = site
    ran = {r["notebook"] for r in json.loads((run / "summary.json").read_text())}
    lessons = [p for p in chosen if p.startswith("notebooks/") and p in ran]
    assert lessons
    for page in lessons:
        browser.get(_page_url(base, page))
        images = browser.find_elements(By.CSS_SELECTOR, ".cell_output img")
        widths = [browser.execute_script("return arguments[0].naturalWidth", i) for i in images]
        tables = browser.find_elements(By.CSS_SELECTOR, ".cell_output table")
        assert any(widths) or tables, f"{page}: no executed image or table on its page"
        if browser.find_elements(By.CSS_SELECTOR, ".math"):
            WebDriverWait(browser, 30).until(
                lambda b: b.find_elements(By.CSS_SELECTOR, "mjx-container"),
                f"{page}: its math is not typeset",
            )
        assert not _site_errors(browser, base), page
    # the download button offers the executed notebook
    browser.get(_page_url(base, lessons[0]))
    link = browser.find_element(By.CSS_SELECTOR, f"a[href$='{Path(lessons[0]).name}']")
    with urllib.request.urlopen(link.get_attribute("href"), timeout=30) as answer:
        notebook = json.loads(answer.read())
    assert any(c.get("outputs") for c in notebook["cells"] if c["cell_type"] == "code")


def test_search_finds_the_lessons_that_teach_all_reduce(site, run, browser):
    base, chosen = site
    naming = {
        p for p in chosen
        if p.startswith("notebooks/") and SEARCHED in build_site._markdown(run / p).lower()
    }  # fmt: skip
    assert {p + ".ipynb" for p in TEACHING} & set(chosen) <= naming
    assert naming, f"no lesson of the site names {SEARCHED}"
    want = {_page_url(base, p) for p in naming}
    browser.get(urljoin(base, f"search.html?q={SEARCHED}"))
    WebDriverWait(browser, 60).until(
        lambda b: "finished" in b.find_element(By.CSS_SELECTOR, "#search-results").text
    )  # Sphinx's own index, searched in the page
    links = browser.find_elements(By.CSS_SELECTOR, "#search-results li a")
    found = {urldefrag(a.get_attribute("href")).url for a in links}
    assert want <= found, (want, found)
    assert not _site_errors(browser, base)
