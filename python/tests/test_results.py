"""continuum_results on results directories written by continuum run (the report's fixtures)."""

from pathlib import Path

import pandas as pd
import pytest

import continuum_results as cr
from results_support import assert_declared_types

FIXTURES = Path(__file__).resolve().parents[2] / "internal" / "report" / "testdata"


@pytest.fixture(params=["quickstart", "sweep"])
def res(request: pytest.FixtureRequest) -> cr.Results:
    return cr.load(FIXTURES / request.param)


def test_every_frame_has_the_declared_columns_and_types(res: cr.Results) -> None:
    assert res.run_ids, "fixture has runs"
    assert list(res.runs["run"]) == res.run_ids
    assert set(res.runs["status"]) <= {"ok", "failed", "interrupted"}
    assert_declared_types(res)


def test_samples_and_timeseries_hold_what_the_files_hold(res: cr.Results) -> None:
    run = res.run_ids[0]
    raw = pd.read_csv(res.path / "runs" / run / "samples.csv")
    s = res.samples[res.samples["run"] == run]
    assert len(s) == len(raw)
    assert s["cpu_seconds"].sum() == pytest.approx(raw["cpu_seconds"].sum())
    # Node rows have an empty component, component rows its name.
    assert (s["component"] == "").any() and (s["component"] != "").any()
    ts = res.timeseries
    assert len(ts) > 0 and (ts["sent"] >= ts["ok"]).all()
    assert set(ts["workload"]) == {p.name for p in (res.path / "runs" / run / "workloads").iterdir()}


def test_metrics_and_stats_agree_with_summary_json(res: cr.Results) -> None:
    run = res.summary["runs"][0]
    name, fields = next((k, v) for k, v in run["metrics"].items() if k.endswith("/latency_ms"))
    assert res.metric(name, "p99")[run["id"]] == pytest.approx(fields["p99"])
    workload, series, _ = name.split("/")
    st = res.stats
    row = st[(st["run"] == run["id"]) & (st["workload"] == workload) & (st["series"] == series)]
    assert len(row) == 1 and row["latency_p99"].iloc[0] == pytest.approx(fields["p99"])


def test_swept_parameters_are_columns() -> None:
    res = cr.load(FIXTURES / "sweep")
    params = res.summary["runs"][0]["params"]
    assert params, "the sweep fixture sweeps something"
    for path in params:
        assert path in res.runs.columns


def test_events_and_a_parent_folder() -> None:
    res = cr.load(FIXTURES / "quickstart")
    assert {"partition", "heal"} <= set(res.events["action"])
    # A folder holding results directories loads the newest of them.
    assert cr.load(FIXTURES).path.parent == FIXTURES


def test_bad_paths_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such results directory"):
        cr.load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="not a results directory"):
        cr.load(tmp_path)


def test_plots(res: cr.Results) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    workload = res.timeseries["workload"].iloc[0]
    ax = cr.plot_cdf(res, workload)
    assert ax.get_lines(), "one line per series"
    ax = cr.plot_timeseries(res, "p50_ms", workload)
    assert ax.get_lines()
    with pytest.raises(ValueError, match="no column"):
        cr.plot_timeseries(res, "nope")
    with pytest.raises(ValueError, match="no latency distribution"):
        cr.plot_cdf(res, "no-such-workload")
