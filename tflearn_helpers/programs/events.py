"""One line protocol between a program in another process and the notebook that started it.

The program calls ``emit("kind", field=value, ...)``, which prints one line
``TFLEARN_EVENT {"kind": ..., ...}``; the notebook reads the program's log with ``parse``,
or waits for a line with ``wait_for`` (built on :func:`processes.wait_until`, so it has a
timeout and stops early when the program dies). A measuring program reports its figure with
``emit("result", value=...)``, collected by ``result``. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from . import processes

__all__ = ["emit", "line", "parse", "result", "wait_for"]

TAG = "TFLEARN_EVENT"


def line(kind: str, **fields) -> str:
    """The text of one event line (what ``emit`` prints)."""
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"an event needs a kind (a non-empty string), got {kind!r}")
    return f"{TAG} {json.dumps({'kind': kind, **fields}, sort_keys=True)}"


def emit(kind: str, **fields) -> None:
    """Print one event line on stdout, flushed at once (so a reader sees it while we run)."""
    print(line(kind, **fields), flush=True)


def parse(text: str, kind: str | None = None) -> list[dict]:
    """The events in a log's text, in order (only those of ``kind`` when given)."""
    found = []
    for text_line in text.splitlines():
        if not text_line.startswith(TAG + " "):
            continue
        try:
            event = json.loads(text_line[len(TAG) + 1 :])
        except json.JSONDecodeError:
            continue  # a line cut short while the process was writing it
        if kind is None or event.get("kind") == kind:
            found.append(event)
    return found


def wait_for(
    read_log: Callable[[], str],
    match: str | Callable[[dict], bool],
    *,
    timeout: float = 60.0,
    depends_on: Iterable[processes.Child] = (),
) -> dict:
    """The first event of the log that ``match`` accepts (a kind, or a test of an event).

    Raises TimeoutError after ``timeout`` s and processes.ProcessExitedError when one of
    ``depends_on`` exits first; both show the last log lines.
    """
    accepts = (lambda e: e.get("kind") == match) if isinstance(match, str) else match
    what = f"a {match!r} event" if isinstance(match, str) else "a matching event"

    def found():
        return next((e for e in parse(read_log()) if accepts(e)), None)

    return processes.wait_until(found, timeout, what, depends_on=depends_on, poll=0.1)


def result(child: processes.Child, timeout: float, what: str):
    """(the ``value`` of the child's last "result" event, its stderr) once it has exited.

    Stops it and raises TimeoutError after ``timeout`` s; RuntimeError when it fails or
    reported no result.
    """
    try:
        code = child.wait(timeout)
    except TimeoutError:
        child.stop(grace=0)
        raise TimeoutError(f"{what} took over {timeout:.0f} s") from None
    found = parse(child.output(), "result")
    if code != 0 or not found:
        reason = f"failed (exit code {code})" if code != 0 else "reported no result"
        raise RuntimeError(f"{what} {reason}:\n{child.errors()[-2000:]}")
    return found[-1]["value"], child.errors()
