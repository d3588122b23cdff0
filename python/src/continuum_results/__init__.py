"""Load a Continuum results directory into pandas DataFrames.

A results directory is what ``continuum run`` writes (docs/results-format.md; the Go package
internal/results declares it). :func:`load` reads one lazily::

    import continuum_results as cr
    res = cr.load("results/quickstart-20261127-101500")
    res.runs          # one row per run: id, status, repeat, seed, started, t0, params as columns
    res.samples       # samples.csv of every run, with a ``run`` column
    res.timeseries    # every workload's timeseries.csv, with ``run`` and ``workload``
    res.percentiles   # every workload's latency distribution (percentiles.csv)
    res.metrics       # summary.json's metrics, long form: run, metric, field, value
    res.events        # events.csv of every run
    cr.plot_cdf(res, "load", "edge")            # matplotlib, optional (continuum_results.plot)

Columns keep the names and units of the files (seconds, milliseconds, bytes) and the types
internal/results declares: numbers as float64 or int64, names as strings, times as UTC timestamps.
Files a run did not write (a platform without an emulated network writes no network.csv) give
empty frames with the declared columns, so code written for one platform runs on another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from ._schema import (
    ERRORS,
    ERRORS_FILE,
    EVENTS,
    EVENTS_FILE,
    INSTANCES,
    INSTANCES_FILE,
    LINKS,
    LINKS_FILE,
    NETWORK,
    NETWORK_FILE,
    PERCENTILES,
    PERCENTILES_FILE,
    SAMPLES,
    SAMPLES_FILE,
    TIMESERIES,
    TIMESERIES_FILE,
)

__all__ = [
    "ERRORS",
    "EVENTS",
    "INSTANCES",
    "LINKS",
    "NETWORK",
    "PERCENTILES",
    "SAMPLES",
    "TIMESERIES",
    "Results",
    "load",
    "plot_cdf",
    "plot_timeseries",
]

# The CSV files of a run and their columns' dtypes come from _schema, which is generated from the
# Go package internal/results ("make results-schema"): the tables are declared once, in Go.
_FLOAT = "float64"
_STR = "string"
_NULLABLE_INT = "Int64"


def _empty(columns: dict[str, str], extra: dict[str, str]) -> pd.DataFrame:
    cols = {**extra, **columns}
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in cols.items()})


def _read_csv(path: Path, columns: dict[str, str]) -> pd.DataFrame | None:
    """One CSV with the declared types; None when the run did not write it. A column the file
    lacks (an older schema) is added as 0 (or empty); an undeclared one is kept as read."""
    if not path.exists():
        return None
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col, typ in columns.items():
        if col not in df.columns:  # absent from an older schema: 0 (docs/results-format.md), "" or NA
            fill: Any = "" if typ == _STR else (pd.NA if typ == _NULLABLE_INT else 0)
            df[col] = pd.Series([fill] * len(df), index=df.index, dtype=typ)
            continue
        if typ == _STR:
            df[col] = df[col].astype(_STR)
        else:
            num = pd.to_numeric(df[col].replace("", None))
            df[col] = num.astype(_NULLABLE_INT) if typ == _NULLABLE_INT else num.fillna(0).astype(typ)
    return df


@dataclass
class Results:
    """One results directory; every frame is read on first use and kept."""

    path: Path
    summary: dict[str, Any] = field(repr=False)

    @cached_property
    def run_ids(self) -> list[str]:
        runs = self.path / "runs"
        return sorted(p.name for p in runs.iterdir() if (p / "run.json").exists()) if runs.is_dir() else []

    def run_info(self, run: str) -> dict[str, Any]:
        """A run's run.json as written."""
        return json.loads((self.path / "runs" / run / "run.json").read_text())

    @cached_property
    def runs(self) -> pd.DataFrame:
        """One row per run: id, status, repeat, seed, duration_s, warmup_s, started, t0, error, and
        each swept parameter as a column named by its path (values as written in the scenario)."""
        rows = []
        for run in self.run_ids:
            info = self.run_info(run)
            row: dict[str, Any] = {
                "run": info.get("id", run),
                "status": info.get("status", ""),
                "repeat": info.get("repeat", 1),
                "seed": info.get("seed", 0),
                "duration_s": info.get("duration_s", 0.0),
                "warmup_s": info.get("warmup_s", 0.0),
                "started": info.get("started"),
                "t0": info.get("t0"),
                "error": info.get("error", ""),
            }
            row.update(info.get("params") or {})
            rows.append(row)
        df = pd.DataFrame(rows, columns=None if rows else ["run", "status", "repeat", "seed"])
        for col in ("started", "t0"):
            if col in df.columns:
                df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601")
        return df

    def _per_run(self, name: str, columns: dict[str, str]) -> pd.DataFrame:
        frames = []
        for run in self.run_ids:
            df = _read_csv(self.path / "runs" / run / name, columns)
            if df is not None and len(df):
                df.insert(0, "run", pd.Series([run] * len(df), dtype=_STR))
                frames.append(df)
        if not frames:
            return _empty(columns, {"run": _STR})
        return pd.concat(frames, ignore_index=True)

    def _per_workload(self, name: str, columns: dict[str, str]) -> pd.DataFrame:
        frames = []
        for run in self.run_ids:
            wdir = self.path / "runs" / run / "workloads"
            for w in sorted(wdir.iterdir()) if wdir.is_dir() else []:
                df = _read_csv(w / name, columns)
                if df is not None and len(df):
                    df.insert(0, "workload", pd.Series([w.name] * len(df), dtype=_STR))
                    df.insert(0, "run", pd.Series([run] * len(df), dtype=_STR))
                    frames.append(df)
        if not frames:
            return _empty(columns, {"run": _STR, "workload": _STR})
        return pd.concat(frames, ignore_index=True)

    @cached_property
    def samples(self) -> pd.DataFrame:
        """samples.csv of every run: node rows have an empty ``component``."""
        return self._per_run(SAMPLES_FILE, SAMPLES)

    @cached_property
    def events(self) -> pd.DataFrame:
        return self._per_run(EVENTS_FILE, EVENTS)

    @cached_property
    def network(self) -> pd.DataFrame:
        """The emulated network per interval (testbed runs only)."""
        return self._per_run(NETWORK_FILE, NETWORK)

    @cached_property
    def links(self) -> pd.DataFrame:
        return self._per_run(LINKS_FILE, LINKS)

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        return self._per_workload(TIMESERIES_FILE, TIMESERIES)

    @cached_property
    def percentiles(self) -> pd.DataFrame:
        return self._per_workload(PERCENTILES_FILE, PERCENTILES)

    @cached_property
    def errors(self) -> pd.DataFrame:
        return self._per_workload(ERRORS_FILE, ERRORS)

    @cached_property
    def instances(self) -> pd.DataFrame:
        return self._per_workload(INSTANCES_FILE, INSTANCES)

    @cached_property
    def stats(self) -> pd.DataFrame:
        """Every workload's stats.json, one row per series: sent, ok, errors, throughput_rps and
        the latency summary as latency_<field> (count, mean, p50, p90, p99, p999, max)."""
        rows = []
        for run in self.run_ids:
            wdir = self.path / "runs" / run / "workloads"
            for w in sorted(wdir.iterdir()) if wdir.is_dir() else []:
                f = w / "stats.json"
                if not f.exists():
                    continue
                doc = json.loads(f.read_text())
                for series, s in (doc.get("series") or {}).items():
                    row: dict[str, Any] = {
                        "run": run,
                        "workload": w.name,
                        "series": series,
                        "status": doc.get("status", ""),
                    }
                    for k in ("sent", "ok", "errors", "throughput_rps"):
                        row[k] = s.get(k, 0)
                    for k, v in (s.get("latency_ms") or {}).items():
                        row[f"latency_{k}"] = v
                    rows.append(row)
        return pd.DataFrame(
            rows, columns=None if rows else ["run", "workload", "series", "sent", "ok", "errors"]
        )

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """summary.json's per-run metrics in long form: run, metric, field, value (numbers only;
        a metric's nested maps, e.g. instance shares, become field paths like ``s1``)."""
        rows = []
        for r in self.summary.get("runs") or []:
            for metric, fields in (r.get("metrics") or {}).items():
                for fld, value in _flatten(fields):
                    rows.append({"run": r.get("id", ""), "metric": metric, "field": fld, "value": value})
        df = pd.DataFrame(rows, columns=["run", "metric", "field", "value"])
        df["value"] = df["value"].astype(_FLOAT)
        return df

    def metric(self, name: str, fld: str = "value") -> pd.Series:
        """One metric's field per run, indexed by run id (e.g. ``metric("load/edge/latency_ms", "p99")``)."""
        m = self.metrics
        sel = m[(m["metric"] == name) & (m["field"] == fld)]
        return sel.set_index("run")["value"]


def _flatten(v: Any, prefix: str = "") -> list[tuple[str, float]]:
    if isinstance(v, bool):
        return [(prefix, float(v))]
    if isinstance(v, int | float):
        return [(prefix, float(v))]
    if isinstance(v, dict):
        out: list[tuple[str, float]] = []
        for k, x in v.items():
            out.extend(_flatten(x, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return []


def load(path: str | Path) -> Results:
    """A results directory (the folder with summary.json and runs/). Given a folder that holds
    results directories, the newest of them is loaded; none is an error that names the path."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"{p}: no such results directory")
    if not (p / "runs").is_dir():
        inner = sorted(d for d in p.iterdir() if (d / "runs").is_dir())
        if not inner:
            raise FileNotFoundError(f"{p}: not a results directory (no runs/ in it or in a folder inside it)")
        p = max(inner, key=lambda d: d.stat().st_mtime)
    summary_file = p / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    return Results(path=p, summary=summary)


def plot_cdf(
    res: Results, workload: str, series: str | None = None, run: str | None = None, ax: Any = None
) -> Any:
    """The latency CDF of a workload's series (every series when None) from percentiles.csv, one
    line per run and series. Needs matplotlib; returns the Axes."""
    from .plot import plot_cdf as impl

    return impl(res, workload, series, run, ax)


def plot_timeseries(
    res: Results, column: str = "p99_ms", workload: str | None = None, run: str | None = None, ax: Any = None
) -> Any:
    """A timeseries.csv column over time per series, with the run's events as vertical lines and
    partitions shaded until their heal. Needs matplotlib; returns the Axes."""
    from .plot import plot_timeseries as impl

    return impl(res, column, workload, run, ax)
