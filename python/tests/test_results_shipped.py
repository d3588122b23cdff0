"""continuum_results on the results of every shipped scenario.

`make test` writes them (made up by the runner's own writers from each scenario file: Go's
TestWriteShippedResults) into $CONTINUUM_SHIPPED_RESULTS, one folder per scenario; run alone,
this test skips.
"""

import os
from pathlib import Path

import pytest

import continuum_results as cr
from results_support import assert_declared_types

ROOT = os.environ.get("CONTINUUM_SHIPPED_RESULTS", "")
DIRS = sorted(Path(ROOT).iterdir()) if ROOT else []


def test_there_are_results() -> None:
    if not ROOT:
        pytest.skip("CONTINUUM_SHIPPED_RESULTS not set (make test sets it)")
    assert len(DIRS) >= 10, f"{len(DIRS)} scenario results in {ROOT}"


@pytest.mark.parametrize("path", DIRS, ids=[d.name for d in DIRS])
def test_loads(path: Path) -> None:
    res = cr.load(path)
    assert res.run_ids and list(res.runs["run"]) == res.run_ids
    assert_declared_types(res)
    # Every swept path is a column of runs; every run's metrics are there.
    for run in res.summary.get("runs", []):
        for p in run.get("params") or {}:
            assert p in res.runs.columns
        if run.get("metrics"):
            assert run["id"] in set(res.metrics["run"])
    # Workload series agree between stats.json and summary.json.
    for _, row in res.stats.iterrows():
        name = f"{row['workload']}/{row['series']}/latency_ms"
        if "latency_p99" in row and row["latency_p99"] == row["latency_p99"]:  # not NaN
            m = res.metric(name, "p99")
            if row["run"] in m.index:
                assert m[row["run"]] == pytest.approx(row["latency_p99"])
