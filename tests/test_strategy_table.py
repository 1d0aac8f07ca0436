import pytest

from tflearn_helpers import report, strategy_table


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(report.RESULTS_ENV, str(tmp_path / "results.json"))


def by_name(name):
    return next(s for s in strategy_table.STRATEGIES if s.name == name)


def test_course_strategies_are_all_in_the_table():
    names = {s.name for s in strategy_table.STRATEGIES}
    for wanted in (
        "OneDeviceStrategy",
        "MirroredStrategy",
        "MultiWorkerMirroredStrategy",
        "ParameterServerStrategy",
        "manual model parallelism",
        "pipelining (micro-batches)",
    ):
        assert wanted in names


def test_missing_figures_say_which_lesson_to_run(store):
    rows = strategy_table.rows()
    assert len(rows) == len(strategy_table.STRATEGIES)
    assert all(len(r) == len(strategy_table.HEADERS) for r in rows)
    measurable = [r for r, s in zip(rows, strategy_table.STRATEGIES, strict=True) if not s.needs]
    assert all("not measured here yet: run lesson" in r[-1] for r in measurable)
    assert strategy_table.missing() == [s.name for s in strategy_table.STRATEGIES if not s.needs]


def test_recorded_figures_land_in_their_rows_only(store):
    report.record("02.steps_per_s.workers=2", 12.5)
    report.record("05.step_ms.naive", 40.0)
    report.record("05.step_ms.gpipe_m4", 25.0)
    report.record("06.step_ms.mwms_workers=2", 7.0)
    rows = {r[0]: r[-1] for r in strategy_table.rows()}
    assert rows["ParameterServerStrategy"] == "02.steps_per_s.workers=2: 12.5"
    assert rows["manual model parallelism"] == "05.step_ms.naive: 40"
    assert rows["pipelining (micro-batches)"] == "05.step_ms.gpipe_m4: 25"
    assert "06.step_ms.mwms_workers=2: 7" in rows["MultiWorkerMirroredStrategy"]
    assert "not measured" in rows["MirroredStrategy"]
    assert strategy_table.missing() == ["OneDeviceStrategy", "MirroredStrategy"]


def test_long_lists_are_cut_and_counted(store):
    for n in range(6):
        report.record(f"04.images_per_s.devices={n + 2}", float(n))
    cell = {r[0]: r[-1] for r in strategy_table.rows(max_figures=2)}["MirroredStrategy"]
    assert cell.count(": ") == 2 and cell.endswith("(+4 more)")


def test_figures_use_a_given_store_without_reading_the_file():
    store = {"03.allreduce_ms.ring": {"value": 1.5}, "09.x": {"value": 2}}
    assert strategy_table.figures(by_name("MirroredStrategy"), store) == {
        "03.allreduce_ms.ring": 1.5
    }


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="StrategyRow"):
        strategy_table.figures("MirroredStrategy", {})
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="max_figures"):
            strategy_table.rows(max_figures=bad, store={})


def test_tpu_row_says_what_it_needs_and_is_never_missing(store):
    tpu = next(r for r in strategy_table.rows() if r[0] == "TPUStrategy")
    assert "needs a TPU" in tpu[-1]
    assert "TPUStrategy" not in strategy_table.missing()
    mwms = by_name("MultiWorkerMirroredStrategy")
    assert "CommunicationOptions" in mwms.watch_out and "timeout" in mwms.watch_out
    assert "keras-team/keras#18624" in by_name("ParameterServerStrategy").watch_out


def test_lesson05_schedules_land_in_the_pipelining_row():
    data = {"05.step_ms.naive": {"value": 10.0}, "05.step_ms.gpipe_m4": {"value": 8.0}}
    data["05.step_ms.one_f_one_b_m4"] = {"value": 7.5}
    assert list(strategy_table.figures(by_name("manual model parallelism"), data)) == [
        "05.step_ms.naive"
    ]
    piped = strategy_table.figures(by_name("pipelining (micro-batches)"), data)
    assert set(piped) == {"05.step_ms.gpipe_m4", "05.step_ms.one_f_one_b_m4"}
