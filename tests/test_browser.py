"""A learner's Run All in a real browser: JupyterLab in headless Chromium.

Starts JupyterLab on loopback (random free port, a token) over a scratch copy of the
notebooks, clicks Run > Run All Cells in Debian's chromium (driven by selenium through
chromedriver), and checks that every code cell ran and no cell shows an error; a notebook
that plots shows its images (every one decoded), one that displays tables shows them as
HTML. A screenshot goes to build/browser/. `make test` installs chromium and
chromium-driver when they are missing.

Which notebooks: exercise 00 (unfilled) and lesson 03 every time (lesson 03 opens
TensorBoard: each TensorBoard frame on a page must draw a scalar chart), plus one of the
other lessons that draw (plots or displayed tables, found in their code by
tools/nbtools.draws), chosen from the commit under test (tools/nbtools.rotating_sample), so
each commit runs the same one and successive commits go round them all.
TFLEARN_BROWSER_LESSONS=all runs every drawing lesson; =03,06 runs those lessons, drawing or
not; TFLEARN_BROWSER_REPEAT=10 runs them 10 times each, one after the other, each in a fresh
kernel (`make soak-lab`: lesson 06 ten times). Each notebook's kernel is shut down when its
test ends. The file prints what it ran. CI time budget: about 3 min on 2 cores (server and
browser ~20 s, lesson 03 and exercise 00 ~1 min, one lesson ~1-2 min at smoke).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import portpicker
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
RUN_TIMEOUT = 420  # seconds for one notebook's Run All on a busy 2-core machine
SAMPLE_ENV, REPEAT_ENV = "TFLEARN_BROWSER_LESSONS", "TFLEARN_BROWSER_REPEAT"
ALWAYS = [
    ("exercises/00_devices_and_setup.ipynb", "not attempted"),  # unfilled, runs to the end
    ("notebooks/03_mirrored_strategy.ipynb", "TensorBoard on http://127.0.0.1"),  # its charts
]


def _commit() -> str:
    """The commit under test, or today's date outside a git checkout."""
    got = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True)
    return got.stdout.decode().strip() or time.strftime("%Y-%m-%d", time.gmtime())


def chosen() -> list[tuple[str, str | None]]:
    """ALWAYS, plus the lessons this run covers (see the module's docstring)."""
    lessons = [p.name for p in nbtools.course_notebooks(("notebooks",))]
    always = {nb for nb, _ in ALWAYS}  # (exercise 00 has lesson 00's file name)
    drawing = [
        n
        for n in lessons
        if f"notebooks/{n}" not in always and nbtools.draws(ROOT / "notebooks" / n)
    ]
    wanted = os.environ.get(SAMPLE_ENV, "")
    if wanted == "all":
        picked = drawing
    elif wanted:
        picked = [n for n in lessons if n.startswith(tuple(wanted.split(",")))]
        if not picked:
            raise ValueError(f"{SAMPLE_ENV}={wanted!r} names no lesson in notebooks/")
    else:
        picked = nbtools.rotating_sample(drawing, _commit())
    repeat = os.environ.get(REPEAT_ENV, "1")
    if not repeat.isdigit() or int(repeat) < 1:
        raise ValueError(f"{REPEAT_ENV}={repeat!r}: give a whole number of runs, 1 or more")
    return ALWAYS + [(f"notebooks/{n}", None) for n in picked] * int(repeat)


CHOSEN = chosen()

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.fail(  # never a silent skip: `make test` installs them
        "chromium and chromium-driver are missing: run `make browser-deps` (apt-get)",
        pytrace=False,
    )

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
    port, token = portpicker.pick_unused_port(), uuid.uuid4().hex
    env = dict(os.environ, TFLEARN_SCALE="smoke", JUPYTERLAB_SETTINGS_DIR=str(home / "settings"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
         "--ServerApp.port_retries=0", "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=(home / "server.log").open("w"),
        start_new_session=True, preexec_fn=_die_with_parent,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        log = home / "server.log"
        _wait_until(lambda: _answers(f"{url}/api/status?token={token}", server), 90, log)
        yield url, token
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        assert not _answers(f"{url}/api/status"), "the JupyterLab server still answers"
        assert port not in _listening_ports(), f"port {port} is still listening"


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
    how = os.environ.get(SAMPLE_ENV) or f"one drawing lesson chosen by commit {_commit()[:10]}"
    how += f", {os.environ[REPEAT_ENV]} times" if os.environ.get(REPEAT_ENV, "1") != "1" else ""
    line = f"browser test ({how}): " + ", ".join(nb for nb, _ in CHOSEN)
    if reporter:
        reporter.write_line(line)
    yield


@pytest.mark.parametrize("notebook, must_show", CHOSEN)
def test_run_all_cells_in_jupyterlab(lab, browser, notebook, must_show):
    url, token = lab
    name = Path(notebook).stem + "-" + Path(notebook).parent.name
    browser.get(f"{url}/lab/workspaces/{name}/tree/{notebook}?reset&token={token}")
    _wait_until(lambda: _prompts(browser), 60)  # the notebook is on screen
    settled = _KernelSettled(url, token, notebook)  # the kernel Run All will use, not a first one
    _wait_until(lambda: _dialog_gone(browser) and _idle_kernel(browser) and settled(), 180)
    _run_all_cells(browser)
    shots = ROOT / "build" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        _wait_until(lambda: _run_ended(browser), RUN_TIMEOUT)
        charts = _tensorboard_charts(browser)  # while the kernel, and so its TensorBoard, lives
    finally:
        browser.save_screenshot(str(shots / f"{name}.png"))
        _shut_down_kernels(url, token)  # the next notebook (or repeat) starts a fresh kernel

    errors = _errors(browser)
    assert not errors, errors
    prompts = _prompts(browser)
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


def _errors(browser) -> list[str]:
    """The tracebacks on the page. JupyterLab renders an error output with the stderr mime
    type (it has no renderer for application/vnd.jupyter.error), so look for the traceback."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('.jp-OutputArea-output'), e => e.textContent)"
        ".filter(t => t.includes('Traceback (most recent call last)')).map(t => t.slice(-600))"
    )


def _tensorboard_charts(browser) -> list[list[str]]:
    """For each TensorBoard frame on the page (tensorboard.notebook.display), the titles of
    the scalar charts it draws: a chart counts once its card holds a drawn line chart."""
    found = []
    for frame in browser.find_elements(By.CSS_SELECTOR, "iframe[id^='tensorboard-frame']"):
        browser.execute_script("arguments[0].scrollIntoView()", frame)  # cards draw when seen
        browser.switch_to.frame(frame)
        try:
            found.append(_wait_until(lambda: _drawn_scalar_cards(browser), 90, quiet=True) or [])
        finally:
            browser.switch_to.default_content()
    return found


def _drawn_scalar_cards(browser) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('scalar-card'))"
        ".filter(c => c.querySelector('line-chart canvas, line-chart svg path'))"
        ".map(c => c.textContent.trim().slice(0, 60))"
    )


class _KernelSettled:
    """True once the server's session for ``notebook`` has had the same kernel, idle, for
    ``seconds``. On the first notebook of a fresh server JupyterLab can start a kernel and
    replace it (seen under load: the first shut down while still booting, the next one
    connected 13 s later); Run All clicked in between ran cell 1 on one kernel and nothing
    after it."""

    def __init__(self, url: str, token: str, notebook: str, seconds: float = 3.0):
        self.url, self.auth, self.notebook, self.seconds = url, token, notebook, seconds
        self.seen: tuple[str, float] | None = None

    def __call__(self) -> bool:
        request = urllib.request.Request(
            f"{self.url}/api/sessions", headers={"Authorization": f"token {self.auth}"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            sessions = [s for s in json.load(reply) if s.get("path") == self.notebook]
        idle = [s["kernel"]["id"] for s in sessions if s["kernel"]["execution_state"] == "idle"]
        if len(sessions) != 1 or not idle:
            self.seen = None
            return False
        if self.seen is None or self.seen[0] != idle[0]:
            self.seen = (idle[0], time.monotonic())
        return time.monotonic() - self.seen[1] >= self.seconds


def _run_all_cells(browser, tries: int = 6) -> None:
    """Run > Run All Cells; clicked again if the first cell has not started (a fresh page
    can report the kernel idle a moment before its session takes commands; see also
    :class:`_KernelSettled`)."""
    for _ in range(tries):
        _click_menu(browser, "Run", "runmenu:run-all")
        try:
            _wait_until(lambda: _prompts(browser)[0].strip("[]: "), 20)
            return
        except TimeoutError:
            browser.find_element(By.CSS_SELECTOR, "body").send_keys("\ue00c")  # Escape
    raise TimeoutError(f"Run All Cells did not start after {tries} clicks")


def _click_menu(browser, menu: str, command: str) -> None:
    items = browser.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
    next(i for i in items if i.text.strip() == menu).click()
    _wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-command='{command}']"), 10)
    browser.find_element(By.CSS_SELECTOR, f"[data-command='{command}']").click()


def _dialog_gone(browser) -> bool:
    """Accept a dialog such as "Select Kernel" (the preselected kernel); True when none is open."""
    buttons = browser.find_elements(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept")
    for button in buttons:
        button.click()
    return not buttons


def _prompts(browser) -> list[str]:
    """Every code cell's prompt, read in one script call: JupyterLab re-renders cells while
    it runs them, so elements found one call earlier can be gone (a stale element)."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll("
        "'.jp-Notebook .jp-CodeCell .jp-InputPrompt'), e => e.textContent.trim())"
    )


def _run_ended(browser) -> bool:
    """Run All has finished, or stopped at an error: nothing queued, the kernel idle."""
    prompts = _prompts(browser)
    started = bool(prompts) and prompts[0].strip("[]: ").isdigit()
    return started and not any("*" in p for p in prompts) and _idle_kernel(browser)


def _idle_kernel(browser) -> bool:
    return browser.execute_script(
        "const s = document.querySelector('.jp-Notebook-ExecutionIndicator');"
        "return s !== null && s.getAttribute('data-status') === 'idle'"
    )


def _shut_down_kernels(url: str, token: str) -> None:
    """End every session the server holds (its kernel with it), through Jupyter's REST API."""
    auth = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(
        urllib.request.Request(f"{url}/api/sessions", headers=auth), timeout=10
    ) as reply:
        sessions = json.load(reply)
    for session in sessions:
        request = urllib.request.Request(
            f"{url}/api/sessions/{session['id']}", headers=auth, method="DELETE"
        )
        urllib.request.urlopen(request, timeout=30).close()


def _die_with_parent() -> None:
    """In the server: Linux kills it if pytest dies before the fixture can stop it."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _answers(url: str, server: subprocess.Popen | None = None) -> bool:
    if server is not None and server.poll() is not None:
        raise RuntimeError(f"JupyterLab exited with code {server.returncode} before answering")
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status < 500
    except OSError:
        return False


def _listening_ports() -> set[int]:
    import psutil

    return {c.laddr.port for c in psutil.net_connections("tcp") if c.status == "LISTEN"}


def _wait_until(condition, seconds: float, log: Path | None = None, quiet: bool = False):
    """condition()'s first truthy value within ``seconds``; else TimeoutError (None if quiet)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    if quiet:
        return None
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise TimeoutError(f"gave up after {seconds:.0f} s waiting for {condition}\n{tail}")
