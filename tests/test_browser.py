"""A learner's Run All in a real browser: JupyterLab in headless Chromium.

Starts JupyterLab on loopback (random free port, a token) over a scratch copy of the
notebooks, clicks Run > Run All Cells in Debian's chromium (driven by selenium through
chromedriver), and checks that every code cell ran and no cell shows an error; a notebook
that plots shows its images (every one decoded), one that displays tables shows them as
HTML; and, as under nbval (conftest.py), nothing the kernel started is left running once it
is shut down. So under `make test` nbval leaves these lessons to this lane (the same stack:
one run proves as much). A screenshot goes to build/browser/. `make test` installs chromium and
chromium-driver when they are missing.

Which notebooks: exercise 00 (unfilled) and lesson 01 every time (lesson 01 opens
TensorBoard: each TensorBoard frame on a page must draw a scalar chart), plus one of the
other lessons that draw (plots or displayed tables, found in their code by
tools/nbtools.draws), chosen from the commit under test (tools/nbtools.browser_notebooks), so
each commit runs the same one and successive commits go round them all.
TFLEARN_BROWSER_LESSONS=all runs every drawing lesson; =01,04 runs those lessons, drawing or
not; TFLEARN_BROWSER_REPEAT=10 runs them 10 times each, one after the other, each in a fresh
kernel (`make soak-lab`: lesson 04 ten times). Each notebook's kernel is shut down when its
test ends. The file prints what it ran; tests/jupyterlab_page.py drives the page and the
server. CI time budget: about 3 min on 2 cores (server and browser ~20 s, lesson 01 and
exercise 00 ~1 min, one lesson ~1-2 min at smoke).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import portpicker
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import leftovers  # noqa: E402
import nbtools  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
RUN_TIMEOUT = 420  # seconds for one notebook's Run All on a busy 2-core machine
MUST_SHOW = {  # what a notebook's page must show once it ran
    "exercises/00_devices_and_setup.ipynb": "not attempted",  # unfilled, runs to the end
    "notebooks/01_mirrored_strategy.ipynb": "TensorBoard on http://127.0.0.1",  # its charts
}
CHOSEN = [(nb, MUST_SHOW.get(nb)) for nb in nbtools.browser_notebooks()]

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.fail(  # never a silent skip: `make test` installs them
        "chromium and chromium-driver are missing: run `make system-deps` (root, apt-get)",
        pytrace=False,
    )

import jupyterlab_page as page  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a scratch copy of the course; stopped for certain."""
    home = tmp_path_factory.mktemp("lab")
    for folder in ("notebooks", "exercises"):
        shutil.copytree(ROOT / folder, home / folder)
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)  # render every cell, so the DOM holds the whole notebook
    (settings / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none", "autoStartDefaultKernel": true}'
    )
    leftovers.snapshot()  # from here on, what this process starts carries its tag (orphans too)
    port, token = portpicker.pick_unused_port(), uuid.uuid4().hex
    env = dict(os.environ, TFLEARN_SCALE="smoke", JUPYTERLAB_SETTINGS_DIR=str(home / "settings"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
         "--ServerApp.port_retries=0", "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=(home / "server.log").open("w"),
        start_new_session=True, preexec_fn=page.die_with_parent,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        log = home / "server.log"
        page.wait_until(lambda: page.answers(f"{url}/api/status?token={token}", server), 90, log)
        yield url, token
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        assert not page.answers(f"{url}/api/status"), "the JupyterLab server still answers"
        assert port not in page.listening_ports(), f"port {port} is still listening"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module", autouse=True)
def say_which(request):
    """Print the notebooks this run covers, whatever pytest's capture and verbosity."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    lessons, repeat = (
        os.environ.get(v) for v in (nbtools.BROWSER_LESSONS_ENV, nbtools.BROWSER_REPEAT_ENV)
    )
    how = lessons or f"one drawing lesson chosen by commit {nbtools.commit()[:10]}"
    how += f", {repeat} times" if repeat not in (None, "1") else ""
    line = f"browser test ({how}): " + ", ".join(nb for nb, _ in CHOSEN)
    if reporter:
        reporter.write_line(line)
    yield


@pytest.mark.parametrize("notebook, must_show", CHOSEN)
def test_run_all_cells_in_jupyterlab(lab, browser, notebook, must_show):
    url, token = lab
    before = leftovers.snapshot()  # the server is in it; this notebook's kernel is not yet
    name = Path(notebook).stem + "-" + Path(notebook).parent.name
    browser.get(f"{url}/lab/workspaces/{name}/tree/{notebook}?reset&token={token}")
    page.wait_until(lambda: page.prompts(browser), 60)  # the notebook is on screen
    settled = page.KernelSettled(
        url, token, notebook
    )  # the kernel Run All will use, not a first one
    page.wait_until(
        lambda: page.dialog_gone(browser) and page.idle_kernel(browser) and settled(), 180
    )
    page.run_all_cells(browser)
    shots = ROOT / "build" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        page.wait_until(lambda: page.run_ended(browser), RUN_TIMEOUT)
        charts = page.tensorboard_charts(browser)  # while the kernel, and so its TensorBoard, lives
    finally:
        browser.save_screenshot(str(shots / f"{name}.png"))
        page.shut_down_kernels(url, token)  # the next notebook (or repeat) starts a fresh kernel
        left = leftovers.leftovers(before)  # what the kernel started must not outlive it
        leftovers.kill(before)

    errors = page.errors(browser)
    assert not errors, errors
    prompts = page.prompts(browser)
    not_run = {i + 1: p for i, p in enumerate(prompts) if not p.strip("[]: ").isdigit()}
    dialogs = [d.text for d in browser.find_elements(By.CSS_SELECTOR, ".jp-Dialog")]
    assert prompts and not not_run, f"code cells not run: {not_run}; dialogs: {dialogs}"
    if must_show:
        assert must_show in browser.find_element(By.CSS_SELECTOR, ".jp-Notebook").text
    opens_board = any(
        "tensorboard_view.show(" in c.source for c in nbtools.read(ROOT / notebook).cells
    )
    assert len(charts) >= opens_board, f"{notebook} opens TensorBoard, but no frame shows it"
    assert all(charts), f"a TensorBoard on the page draws no scalar chart: {charts}"
    drawn = nbtools.draws(ROOT / notebook)
    if "image" in drawn:  # its plots are on the page, and decoded
        images = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output img")
        assert images, f"{notebook} plots, but no image is on the page"
        sizes = [browser.execute_script("return arguments[0].naturalWidth", i) for i in images]
        assert all(sizes), f"an image did not decode: widths {sizes}"
    if "html" in drawn:  # its displayed tables (or frames) are rendered as HTML, not as text
        shown = ".jp-OutputArea-output table, .jp-OutputArea-output iframe"
        assert browser.find_elements(By.CSS_SELECTOR, shown), f"{notebook} displays no HTML"
    assert not left, f"{notebook} left these running after its kernel stopped: {left}"
