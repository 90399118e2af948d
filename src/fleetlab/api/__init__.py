"""fleetlab as a Python library: the whole method from a notebook, with the command line's results.

Import a cluster's record, measure today's baseline, calibrate a replay, run an experiment of one-change
variants over paired seeds, and read the verdict as objects (docs/python-api.md)::

    import fleetlab.api as fl

    history = fl.import_history(["pods-jobs.json", "workloads.json", "events.json", "nodes.json"])
    measured = fl.baseline(history)                      # waits, completion, idle capacity, cost
    calibration = fl.calibrate(history, out="calibration")
    sweep = fl.run_experiment(calibration, variants={"pack": {"policy": "most-allocated"}}, out="sweep")
    sweep.verdicts(), sweep.best("completion_p95_s"), sweep.dataframe("runs")

One run, as ``fleetlab simulate`` (byte for byte the same files once written)::

    result = fl.run(fl.load("examples/two-teams/baseline.yaml", seed=3), policy="most-allocated")
    result.jobs                                          # pyarrow.Table; result.dataframe("jobs"): pandas
    fl.time_weighted(result, "allocated_gpus")           # timeline rows are change points

Tables are Arrow; pandas and polars frames come on request (``pip install 'fleetlab[dataframes]'``). Bad input
raises :class:`fleetlab.spec.errors.SpecError` with the paragraph the command line prints.
"""

from fleetlab.api.compare import Best, Comparison, Samples, compare
from fleetlab.api.core import DEFAULT_COMPARE, Result, Scenario, compare_policies, load, run
from fleetlab.api.experiment import ExperimentResult, load_experiment_result, run_experiment
from fleetlab.api.frames import MissingDependency, time_weighted, to_frame
from fleetlab.api.history import (
    Baseline,
    Calibration,
    History,
    baseline,
    calibrate,
    import_history,
    load_history_folder,
)
from fleetlab.experiment.stats import Interval
from fleetlab.experiment.verdict import CandidateVerdict, Finding
from fleetlab.spec.errors import SpecError

#: A column's verdict against the baseline: one finding per decision metric, each with its word and interval.
Verdict = CandidateVerdict

__all__ = [
    "DEFAULT_COMPARE",
    "Baseline",
    "Best",
    "Calibration",
    "CandidateVerdict",
    "Comparison",
    "ExperimentResult",
    "Finding",
    "History",
    "Interval",
    "MissingDependency",
    "Result",
    "Samples",
    "Scenario",
    "SpecError",
    "Verdict",
    "baseline",
    "calibrate",
    "compare",
    "compare_policies",
    "import_history",
    "load",
    "load_experiment_result",
    "load_history_folder",
    "run",
    "run_experiment",
    "time_weighted",
    "to_frame",
]
