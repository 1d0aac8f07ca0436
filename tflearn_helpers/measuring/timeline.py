"""Per-device timelines: when each stage worked, drawn as a Gantt chart (taught in lesson 03).

A ``Timeline`` keeps (lane, label, start, end) events measured with ``time.perf_counter``
from any thread; from them it derives how busy each lane was, the idle fraction of the
whole span (the pipeline "bubble") and how much of the time two or more lanes worked at once.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["Event", "Timeline"]


@dataclass(frozen=True)
class Event:
    lane: str
    label: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


class Timeline:
    """Events on named lanes (one per device or stage); thread-safe to record into."""

    def __init__(self, lanes: list[str] | None = None):
        self.lanes: list[str] = list(lanes or [])
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def add(self, lane: str, label: str, start: float, end: float) -> None:
        if end < start:
            raise ValueError(f"event {label!r} on {lane!r} ends ({end}) before it starts ({start})")
        with self._lock:
            if lane not in self.lanes:
                self.lanes.append(lane)
            self.events.append(Event(lane, label, start, end))

    @contextmanager
    def span(self, lane: str, label: str):
        """Record the time the ``with`` body takes as one event."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(lane, label, start, time.perf_counter())

    def _check(self) -> None:
        if not self.events:
            raise ValueError("the timeline has no events yet")

    @property
    def start(self) -> float:
        self._check()
        return min(e.start for e in self.events)

    @property
    def span_seconds(self) -> float:
        """Wall time from the first start to the last end."""
        self._check()
        return max(e.end for e in self.events) - self.start

    def busy_seconds(self, lane: str) -> float:
        """Time ``lane`` was working (overlapping events on one lane counted once)."""
        if lane not in self.lanes:
            raise KeyError(f"no lane {lane!r}; lanes are {self.lanes}")
        return _union_length([(e.start, e.end) for e in self.events if e.lane == lane])

    def idle_fraction(self) -> float:
        """Share of lanes x span during which lanes sat idle: the measured bubble."""
        total = len(self.lanes) * self.span_seconds
        return 1.0 - sum(self.busy_seconds(lane) for lane in self.lanes) / total

    def overlap_seconds(self) -> float:
        """Time during which at least two lanes worked at once."""
        self._check()
        overlap = 0.0
        points = sorted({t for e in self.events for t in (e.start, e.end)})
        for a, b in pairwise(points):
            mid = (a + b) / 2
            if len({e.lane for e in self.events if e.start <= mid < e.end}) >= 2:
                overlap += b - a
        return overlap

    def plot(self, ax=None, title: str | None = None):
        """Draw the events as a Gantt chart (one row per lane, time in ms from the start)."""
        import matplotlib.pyplot as plt

        self._check()
        if ax is None:
            _, ax = plt.subplots(figsize=(10, 0.6 + 0.5 * len(self.lanes)))
        t0 = self.start
        for row, lane in enumerate(self.lanes):
            for e in (e for e in self.events if e.lane == lane):
                backward = e.label.startswith("B")
                ax.barh(
                    row,
                    (e.end - e.start) * 1e3,
                    left=(e.start - t0) * 1e3,
                    height=0.6,
                    color="tab:orange" if backward else "tab:blue",
                    edgecolor="black",
                )
                ax.text(
                    (e.start - t0 + e.seconds / 2) * 1e3,
                    row,
                    e.label,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
        ax.set_yticks(range(len(self.lanes)), self.lanes)
        ax.invert_yaxis()
        ax.set_xlabel("ms since the step started (blue: forward, orange: backward)")
        ax.set_title(title or f"idle (bubble) {self.idle_fraction():.0%} of the lanes' time")
        return ax


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total
