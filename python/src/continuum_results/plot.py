"""Plots of a results directory on matplotlib (imported only when a plot is asked for)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import Results


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    return ax


def plot_cdf(res: Results, workload: str, series: str | None, run: str | None, ax: Any) -> Any:
    p = res.percentiles
    p = p[p["workload"] == workload]
    if series is not None:
        p = p[p["series"] == series]
    if run is not None:
        p = p[p["run"] == run]
    if p.empty:
        raise ValueError(
            f"no latency distribution for workload {workload!r}"
            + (f" series {series!r}" if series else "")
            + (f" run {run!r}" if run else "")
        )
    ax = _axes(ax)
    for (r, s), g in p.groupby(["run", "series"], sort=True):
        ax.plot(g["latency_ms"], g["percentile"] / 100, label=f"{s} (run {r})", drawstyle="steps-post")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1)
    ax.legend()
    return ax


def plot_timeseries(res: Results, column: str, workload: str | None, run: str | None, ax: Any) -> Any:
    ts = res.timeseries
    if column not in ts.columns:
        raise ValueError(f"no column {column!r} in timeseries.csv; columns: {', '.join(ts.columns)}")
    run = run if run is not None else (res.run_ids[0] if res.run_ids else None)
    ts = ts[ts["run"] == run]
    if workload is not None:
        ts = ts[ts["workload"] == workload]
    ax = _axes(ax)
    for (w, s), g in ts.groupby(["workload", "series"], sort=True):
        ax.plot(g["t_s"], g[column], label=f"{w}/{s}")
    ev = res.events
    ev = ev[(ev["run"] == run) & (ev["status"] == "ok")]
    open_partition: float | None = None
    for _, e in ev.iterrows():
        ax.axvline(e["t_s"], color="grey", linestyle=":", linewidth=1)
        ax.annotate(
            e["action"],
            (e["t_s"], 1),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            fontsize=8,
        )
        if e["action"] == "partition" and open_partition is None:
            open_partition = e["t_s"]
        elif e["action"] == "heal" and open_partition is not None:
            ax.axvspan(open_partition, e["t_s"], color="red", alpha=0.08)
            open_partition = None
    ax.set_xlabel("time since the workloads started (s)")
    ax.set_ylabel(column)
    ax.legend()
    return ax
