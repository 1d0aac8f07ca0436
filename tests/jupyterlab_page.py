"""Driving JupyterLab for tests/test_browser.py: its server's REST API (sessions, kernels,
status) and the page in Chromium (menus, prompts, errors, TensorBoard frames)."""

from __future__ import annotations

import ctypes
import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from selenium.webdriver.common.by import By


def errors(browser) -> list[str]:
    """The tracebacks on the page. JupyterLab renders an error output with the stderr mime
    type (it has no renderer for application/vnd.jupyter.error), so look for the traceback."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('.jp-OutputArea-output'), e => e.textContent)"
        ".filter(t => t.includes('Traceback (most recent call last)')).map(t => t.slice(-600))"
    )


def tensorboard_charts(browser) -> list[list[str]]:
    """For each TensorBoard frame on the page (tensorboard.notebook.display), the titles of
    the scalar charts it draws: a chart counts once its card holds a drawn line chart."""
    found = []
    for frame in browser.find_elements(By.CSS_SELECTOR, "iframe[id^='tensorboard-frame']"):
        browser.execute_script("arguments[0].scrollIntoView()", frame)  # cards draw when seen
        browser.switch_to.frame(frame)
        try:
            found.append(wait_until(lambda: _drawn_scalar_cards(browser), 90, quiet=True) or [])
        finally:
            browser.switch_to.default_content()
    return found


def _drawn_scalar_cards(browser) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('scalar-card'))"
        ".filter(c => c.querySelector('line-chart canvas, line-chart svg path'))"
        ".map(c => c.textContent.trim().slice(0, 60))"
    )


class KernelSettled:
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


def run_all_cells(browser, tries: int = 6) -> None:
    """Run > Run All Cells; clicked again if the first cell has not started (a fresh page
    can report the kernel idle a moment before its session takes commands; see also
    :class:`KernelSettled`)."""
    for _ in range(tries):
        _click_menu(browser, "Run", "runmenu:run-all")
        try:
            wait_until(lambda: prompts(browser)[0].strip("[]: "), 20)
            return
        except TimeoutError:
            browser.find_element(By.CSS_SELECTOR, "body").send_keys("\ue00c")  # Escape
    raise TimeoutError(f"Run All Cells did not start after {tries} clicks")


def _click_menu(browser, menu: str, command: str) -> None:
    items = browser.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
    next(i for i in items if i.text.strip() == menu).click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, f"[data-command='{command}']"), 10)
    browser.find_element(By.CSS_SELECTOR, f"[data-command='{command}']").click()


def dialog_gone(browser) -> bool:
    """Accept a dialog such as "Select Kernel" (the preselected kernel); True when none is open."""
    buttons = browser.find_elements(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept")
    for button in buttons:
        button.click()
    return not buttons


def prompts(browser) -> list[str]:
    """Every code cell's prompt, read in one script call: JupyterLab re-renders cells while
    it runs them, so elements found one call earlier can be gone (a stale element)."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll("
        "'.jp-Notebook .jp-CodeCell .jp-InputPrompt'), e => e.textContent.trim())"
    )


def run_ended(browser) -> bool:
    """Run All has finished, or stopped at an error: nothing queued, the kernel idle."""
    shown = prompts(browser)
    started = bool(shown) and shown[0].strip("[]: ").isdigit()
    return started and not any("*" in p for p in shown) and idle_kernel(browser)


def idle_kernel(browser) -> bool:
    return browser.execute_script(
        "const s = document.querySelector('.jp-Notebook-ExecutionIndicator');"
        "return s !== null && s.getAttribute('data-status') === 'idle'"
    )


def shut_down_kernels(url: str, token: str) -> None:
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


def die_with_parent() -> None:
    """In the server: Linux kills it if pytest dies before the fixture can stop it."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def answers(url: str, server: subprocess.Popen | None = None) -> bool:
    if server is not None and server.poll() is not None:
        raise RuntimeError(f"JupyterLab exited with code {server.returncode} before answering")
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status < 500
    except OSError:
        return False


def listening_ports() -> set[int]:
    import psutil

    return {c.laddr.port for c in psutil.net_connections("tcp") if c.status == "LISTEN"}


def wait_until(condition, seconds: float, log: Path | None = None, quiet: bool = False):
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
