"""What the continuum_results tests check on every results directory they load."""

import continuum_results as cr


def assert_declared_types(res: cr.Results) -> None:
    """Every per-run and per-workload frame has the columns internal/results declares, typed."""
    for frame, declared in [
        (res.samples, cr.SAMPLES),
        (res.events, cr.EVENTS),
        (res.timeseries, cr.TIMESERIES),
        (res.percentiles, cr.PERCENTILES),
        (res.network, cr.NETWORK),
        (res.links, cr.LINKS),
        (res.errors, cr.ERRORS),
        (res.instances, cr.INSTANCES),
    ]:
        for col, typ in declared.items():
            assert col in frame.columns, col
            assert str(frame[col].dtype) == typ, (col, frame[col].dtype, typ)
        assert str(frame["run"].dtype) == "string"
