import threading
import time

import pytest

from tflearn_helpers.measuring.timeline import Timeline


def two_lanes():
    tl = Timeline(["a", "b"])
    tl.add("a", "F0", 0.0, 1.0)
    tl.add("b", "F0", 1.0, 2.0)
    tl.add("a", "F1", 1.0, 2.0)
    tl.add("b", "F1", 2.0, 3.0)
    return tl


def test_busy_idle_and_overlap_are_derived_from_the_events():
    tl = two_lanes()
    assert tl.span_seconds == pytest.approx(3.0)
    assert tl.busy_seconds("a") == pytest.approx(2.0)
    assert tl.idle_fraction() == pytest.approx(1 - 4 / 6)
    assert tl.overlap_seconds() == pytest.approx(1.0)


def test_overlapping_events_on_one_lane_count_once():
    tl = Timeline()
    tl.add("a", "x", 0.0, 2.0)
    tl.add("a", "y", 1.0, 3.0)
    assert tl.busy_seconds("a") == pytest.approx(3.0)
    assert tl.overlap_seconds() == 0.0
    assert tl.idle_fraction() == pytest.approx(0.0)


def test_span_records_from_several_threads():
    tl = Timeline()

    def work(lane):
        with tl.span(lane, "F0"):
            time.sleep(0.01)

    threads = [threading.Thread(target=work, args=(f"lane {i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(tl.lanes) == ["lane 0", "lane 1", "lane 2"]
    assert all(e.seconds >= 0.009 for e in tl.events)


def test_bad_input_is_refused_clearly():
    tl = Timeline()
    with pytest.raises(ValueError, match="no events"):
        tl.idle_fraction()
    with pytest.raises(ValueError, match="ends"):
        tl.add("a", "F0", 2.0, 1.0)
    tl.add("a", "F0", 0.0, 1.0)
    with pytest.raises(KeyError, match="no lane"):
        tl.busy_seconds("nope")


def test_plot_draws_one_bar_per_event():
    import matplotlib

    matplotlib.use("Agg")
    ax = two_lanes().plot(title="t")
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
