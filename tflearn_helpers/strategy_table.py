"""Choosing a strategy: the course's decision table, filled with figures measured on this
machine by lessons 02-05 and 06 (taught in lesson 06).

Each row names the record keys (prefixes) it draws its figures from; the figures come
from ``report.recorded_prefix``, never from this file. A row whose lesson has not run on
this machine says so instead of showing a number.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import report, validate

__all__ = ["HEADERS", "STRATEGIES", "StrategyRow", "figures", "missing", "rows"]


@dataclass(frozen=True)
class StrategyRow:
    """One row of the decision table (not a ``tf.distribute.Strategy``)."""

    name: str
    lesson: str
    use_when: str
    watch_out: str
    prefixes: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    needs: str = ""  # hardware this machine may lack; the row then says so instead

    def owns(self, key: str) -> bool:
        return key.startswith(self.prefixes) and not key.startswith(self.exclude or ("\0",))


STRATEGIES = (
    StrategyRow(
        "OneDeviceStrategy",
        "03, 04",
        "model and batch fit one device; the baseline for every other row",
        "no speed-up; use it to keep one code path for 1 and N devices",
        ("04.images_per_s.devices=1", "06.step_ms.one_device"),
    ),
    StrategyRow(
        "MirroredStrategy",
        "03, 04",
        "several GPUs in one machine, model fits on each",
        "global batch = replicas x per-replica batch; all-reduce moves 2(N-1)/N x model bytes",
        ("03.", "04.", "06.step_ms.mirrored"),
    ),
    StrategyRow(
        "MultiWorkerMirroredStrategy",
        "06",
        "more GPUs than one machine holds, synchronous steps",
        "every worker must be alive (one failure stops all); Keras 3 fit fails: tf_keras or a "
        "custom loop; CommunicationOptions: RING on CPUs, NCCL between GPUs, and a "
        "timeout_seconds so a missing peer ends in an error instead of a wait",
        ("06.step_ms.mwms",),
    ),
    StrategyRow(
        "ParameterServerStrategy",
        "02",
        "many workers that may fail or be preempted (asynchronous training goes on without "
        "them); embedding tables too large for one device (sharded variables)",
        "needs a coordinator; stale gradients; Keras 3 does not support it "
        "(keras-team/keras#18624): a custom loop with ClusterCoordinator, or tf_keras fit",
        ("02.",),
    ),
    StrategyRow(
        "TPUStrategy",
        "-",
        "TPUs (a Cloud TPU VM or pod slice); synchronous like MirroredStrategy",
        "needs a TPU runtime whose TensorFlow matches it (on Colab: a TPU runtime; check "
        "tf.config.list_logical_devices('TPU')); XLA-compiled steps, static shapes",
        (),
        needs="a TPU",
    ),
    StrategyRow(
        "manual model parallelism",
        "05",
        "the model does not fit in one device's memory",
        "one stage works at a time: the other devices wait",
        ("05.",),
        ("05.step_ms.gpipe", "05.step_ms.one_f_one_b", "05.bubble"),
    ),
    StrategyRow(
        "pipelining (micro-batches)",
        "05",
        "model parallelism with enough micro-batches to keep stages busy",
        "idle bubble (K-1)/(M+K-1); GPipe keeps M micro-batches of activations, 1F1B at most K",
        ("05.step_ms.gpipe", "05.step_ms.one_f_one_b", "05.bubble"),
    ),
)
HEADERS = ("strategy", "lesson", "use when", "watch out for", "measured on this machine")


def figures(strategy: StrategyRow, store: dict[str, dict] | None = None) -> dict[str, float]:
    """The recorded figures that belong to ``strategy`` (key -> value)."""
    if not isinstance(strategy, StrategyRow):
        raise TypeError(f"expected a StrategyRow from STRATEGIES, got {strategy!r}")
    store = report.recorded_prefix("") if store is None else store
    return {k: e["value"] for k, e in sorted(store.items()) if strategy.owns(k)}


def rows(max_figures: int = 4, store: dict[str, dict] | None = None) -> list[tuple]:
    """One row per strategy; its last cell lists up to ``max_figures`` recorded figures,
    or says which lesson to run when none were recorded here."""
    validate.whole_number("max_figures", max_figures, minimum=1)
    store = report.recorded_prefix("") if store is None else store
    out = []
    for s in STRATEGIES:
        found = figures(s, store)
        if s.needs:
            cell = f"needs {s.needs}: not measured by this course"
        elif found:
            shown = [f"{k}: {report.format_value(v)}" for k, v in list(found.items())[:max_figures]]
            more = len(found) - len(shown)
            cell = "; ".join(shown) + (f" (+{more} more)" if more else "")
        else:
            cell = f"not measured here yet: run lesson {s.lesson} on this machine"
        out.append((s.name, s.lesson, s.use_when, s.watch_out, cell))
    return out


def missing(store: dict[str, dict] | None = None) -> list[str]:
    """Names of the strategies with no figure recorded on this machine."""
    store = report.recorded_prefix("") if store is None else store
    return [s.name for s in STRATEGIES if not s.needs and not figures(s, store)]
