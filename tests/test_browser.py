"""A learner's Run All in a real browser: JupyterLab in headless Chromium.

Starts JupyterLab on loopback (random free port, a token) over a scratch copy of the
notebooks, clicks Run > Run All Cells in Debian's chromium (driven by selenium through
chromedriver), and checks that every code cell ran, no cell shows an error and the
device table is on the page. A screenshot goes to build/browser/. `make test` installs
chromium and chromium-driver when they are missing.
"""

from __future__ import annotations

import ctypes
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
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
RUN_TIMEOUT = 420  # seconds for one notebook's Run All on a busy 2-core machine

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


@pytest.mark.parametrize(
    "notebook, must_show",
    [
        ("notebooks/00_devices_and_setup.ipynb", "logical device"),  # the device table
        ("exercises/00_devices_and_setup.ipynb", "not attempted"),  # unfilled, runs to the end
    ],
)
def test_run_all_cells_in_jupyterlab(lab, browser, notebook, must_show):
    url, token = lab
    name = Path(notebook).stem + "-" + Path(notebook).parent.name
    browser.get(f"{url}/lab/workspaces/{name}/tree/{notebook}?reset&token={token}")
    _wait_until(lambda: _prompts(browser), 60)  # the notebook is on screen
    _wait_until(lambda: _dialog_gone(browser) and _idle_kernel(browser), 120)
    _run_all_cells(browser)
    shots = ROOT / "build" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        _wait_until(lambda: _run_ended(browser), RUN_TIMEOUT)
    finally:
        browser.save_screenshot(str(shots / f"{name}.png"))

    errors = browser.find_elements(
        By.CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"
    )
    assert not errors, [e.text[-600:] for e in errors]
    prompts = _prompts(browser)
    assert prompts and all(p.strip("[]: ").isdigit() for p in prompts), prompts
    assert must_show in browser.find_element(By.CSS_SELECTOR, ".jp-Notebook").text


def _run_all_cells(browser, tries: int = 3) -> None:
    """Run > Run All Cells; clicked again if the first cell has not started (a fresh page
    can report the kernel idle a moment before its session takes commands)."""
    for _ in range(tries):
        _click_menu(browser, "Run", "runmenu:run-all")
        try:
            _wait_until(lambda: _prompts(browser)[0].strip("[]: "), 15)
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
    cells = browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell .jp-InputPrompt")
    return [c.text.strip() for c in cells]


def _run_ended(browser) -> bool:
    """Run All has finished, or stopped at an error: nothing queued, the kernel idle."""
    prompts = _prompts(browser)
    started = bool(prompts) and prompts[0].strip("[]: ").isdigit()
    return started and not any("*" in p for p in prompts) and _idle_kernel(browser)


def _idle_kernel(browser) -> bool:
    status = browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")
    return bool(status) and status[0].get_attribute("data-status") == "idle"


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


def _wait_until(condition, seconds: float, log: Path | None = None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise TimeoutError(f"gave up after {seconds:.0f} s waiting for {condition}\n{tail}")
