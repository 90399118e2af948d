"""Calibrate: say why jobs waited, replay the history with its policy, fit what the record hides on the
earlier part, and judge the replay on the later part (docs/calibration.md).

1. The record alone says how much of the waiting capacity explains and what else it shows
   (``metrics.wait_causes``), before anything is fitted.
2. The policy is the recorded one (Kueue objects, quotas, Slurm limits) or, where none was recorded,
   inferred per user, team or queue (``history_policy``; its level ``limit_quantile`` is fitted).
3. Knobs are fitted one after the other on the *fit part* (``history_split``: what the record showed at
   ``--fit-until``), each on a fixed grid by the lowest score (the worse of the waits' KS distance and
   their p95 relative error, each over its tolerance; ties: the earlier candidate): the limit level, the
   scheduling latency or instead a delay drawn per job from the waits the record leaves unexplained
   (``delay_fit``), the boot time of nodes that joined, the first-pull time of the image (by the KS
   distance of the pulls). With an inferred policy each candidate is scored out of sample inside the fit
   part (``fit_scoring``: limits read from its earlier two thirds, judged on the rest), as the
   validation judges the final fit.
4. The whole history is replayed with what was fitted, under ``seeds`` seeds where the scenario draws at
   random (once where it does not; ``calibration_seeds``): ``rows`` compare the fit part's jobs,
   ``validation`` the later part's, each the mean over the seeds with its own verdict on that mean; the
   knob search scores a candidate that draws at random on the mean over the first of those seeds
   (``_seed_scores``), as that verdict judges. A fitted latency longer than the median
   compute (or a bound the user sets) is flagged: it absorbs waiting that capacity does not explain; so
   is a fitted drawn delay, always, with the share of the waiting it absorbs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fleetlab.experiment.background_fit import (
    background_evidence,
    background_flag,
    background_grid,
    background_kept_at_zero,
)
from fleetlab.experiment.calibration_compare import (
    DEFAULT_TOLERANCES,
    BoolArray,
    Measured,
    MetricRow,
    Side,
    Simulated,
    compare,
    compare_class,
    ks_distance,
    rel_error,
    verdict,
)
from fleetlab.experiment.calibration_record import calibration_record, pull_row
from fleetlab.experiment.calibration_seeds import SeedReplay, mean_rows, random_parts
from fleetlab.experiment.delay_fit import UNEXPLAINED, delay_flag, delay_note, unexplained_delay
from fleetlab.experiment.history_batch import recorded_fair_share
from fleetlab.experiment.history_partitions import partition_notes
from fleetlab.experiment.history_policy import ReplayPolicy, choose_grouping, inferred_policy, recorded_policy
from fleetlab.experiment.history_scenario import (
    Knobs,
    complete_nodes,
    has_node_arrivals,
    history_jobs,
    history_scenario,
    removal_notes,
)
from fleetlab.experiment.history_split import history_until, split_instant
from fleetlab.experiment.run import Run, run_one
from fleetlab.experiment.seed_counts import DEFAULT_SEEDS
from fleetlab.metrics.baseline import job_columns, job_times
from fleetlab.metrics.baseline_cost import cluster_cost, idle_capacity
from fleetlab.metrics.policy_evidence import JobSpans
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.unlisted_use import unlisted_use
from fleetlab.metrics.wait_causes import WaitCauses, diagnose_waits
from fleetlab.model.history import History
from fleetlab.model.job import Job
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.spec.loader import resolve

__all__ = [
    "DEFAULT_TOLERANCES",
    "Calibration",
    "MetricRow",
    "Side",
    "calibrate",
    "compare_class",
    "ks_distance",
]

#: Candidate scheduling latencies are these quantiles of the measured positive waits (plus 0).
LATENCY_GRID_QUANTILES = (0.1, 0.25, 0.5, 0.75)
#: Candidate boot times (request to ready) of nodes the replay's autoscaler adds.
BOOT_GRID_S = (30.0, 60.0, 120.0, 300.0, 600.0)
#: Candidate first-pull times are 0 and these quantiles of the measured positive image pulls.
PULL_GRID_QUANTILES = (0.25, 0.5, 0.75, 1.0)
#: Candidate levels of inferred per-group limits (None: no limit; 1: the most a group ever held).
LIMIT_GRID: tuple[float | None, ...] = (None, 1.0, 0.9, 0.75, 0.5)
DISAGREEMENTS = 10
#: A later candidate replaces the best so far only when it lowers the score by more than this share of it
#: (the grids start at the simplest value: no limit, no latency), so noise does not pick a knob.
MIN_GAIN = 0.02
#: Knobs fitted a second time, after the others (``_fit``).
REFITTED = ("limit_quantile", "job_limit_quantile")
#: With an inferred policy the fit scores its candidates out of sample (``fit_scoring``): limits read from
#: this share of the fit part's submissions, judged on the fit part's jobs submitted after them ...
INNER_FIT_SHARE = 2.0 / 3.0
#: ... when at least this many of those have a measured wait (else in sample, on every job of the fit part).
MIN_SCORED_WAITS = 20
#: Most seeds a random candidate is scored on: the validation's first, as many as the default --seeds.
FIT_SEEDS = DEFAULT_SEEDS


@dataclass(frozen=True)
class FitScoring:
    """Which jobs of the fit part score a candidate, and where an inferred policy is read for it."""

    #: ``in-sample`` (every job of the fit part, limits read from the fit part) or ``rolling-origin``.
    method: str
    #: Rolling origin: limits are read from what the record showed at this instant (seconds from the epoch)
    #: and the jobs of the fit part submitted at or after it score the candidates.
    read_until_s: float | None
    scored_jobs: int
    reason: str
    #: The inner part limits are read from (rolling origin only).
    source: History | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """What calibration.json shows under ``fit_scoring``."""
        return {"method": self.method, "read_until_s": self.read_until_s, "scored_jobs": self.scored_jobs,
                "reason": self.reason}  # fmt: skip

    def scored(self, measured: Measured) -> BoolArray | None:
        """The mask of the scored jobs (None: every job)."""
        return None if self.read_until_s is None else measured.submit >= self.read_until_s


def fit_scoring(fit_history: History, inferred: bool) -> FitScoring:
    """Rolling origin where the policy is inferred: a limit read from the record is judged on jobs it was
    not read from, as the validation judges it, so a level that only describes the weeks it was read from
    (a backlog that grows once demand changes) loses to one that carries over. In sample otherwise: a
    recorded policy or a latency reads nothing from the jobs, and every job of the fit part scores."""
    measured = Measured.of(fit_history)
    every = len(measured.ids)
    if not inferred:
        return FitScoring("in-sample", None, every, "no inferred policy: nothing is read from the jobs")
    inner = split_instant(fit_history, INNER_FIT_SHARE)
    later = (measured.submit >= inner) & measured.known
    earlier = (measured.submit < inner) & measured.known
    if inner >= float(fit_history.end_s) or int(later.sum()) < MIN_SCORED_WAITS or not earlier.any():
        return FitScoring(
            "in-sample", None, every,
            f"fewer than {MIN_SCORED_WAITS} measured waits after the fit part's earlier "
            f"{INNER_FIT_SHARE:.0%} of submissions: scored on every job of the fit part",
        )  # fmt: skip
    return FitScoring(
        "rolling-origin", inner, int((measured.submit >= inner).sum()),
        f"inferred limits read from the fit part's earlier {INNER_FIT_SHARE:.0%} of submissions (before "
        f"{inner:.0f} s), each candidate judged on the {int((measured.submit >= inner).sum())} later job(s) "
        "of the fit part",
        source=history_until(fit_history, inner),
    )  # fmt: skip


@dataclass
class Validation:
    """The later part of the history, replayed with what the earlier part fitted."""

    rows: list[MetricRow]
    jobs: int

    @property
    def verdict(self) -> str:
        """``pass`` when every judged row is within tolerance."""
        return verdict(self.rows)


@dataclass
class Calibration:
    """The outcome: rows per metric and class, the fitted knobs, the disagreements, the chosen run."""

    rows: list[MetricRow]
    knobs: Knobs
    fit: list[dict[str, Any]]
    disagreements: list[dict[str, Any]]
    scenario: Scenario
    run: Run
    notes: list[str] = field(default_factory=list)
    #: The knobs that were fitted (the others keep their defaults).
    fitted: list[str] = field(default_factory=list)
    wait_causes: WaitCauses | None = None
    policy: ReplayPolicy | None = None
    validation: Validation | None = None
    fit_until_s: float | None = None
    #: Fitted knobs that absorb waiting capacity does not explain (never a silent fit).
    flags: list[str] = field(default_factory=list)
    #: How the fit scored its candidates (None: nothing fitted).
    fit_scoring: FitScoring | None = None
    #: Each seed's rows (the first: the scenario's seed, whose replay is ``run``); ``rows`` and
    #: ``validation`` hold their means.
    seed_replays: list[SeedReplay] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``pass`` when every comparable metric is within tolerance, else ``fail``."""
        return verdict(self.rows)


@dataclass
class _Setup:
    """What every replay of one history shares: its policy, its jobs (built once per policy shape)."""

    history: History
    recorded: ReplayPolicy | None
    grouping: str | None
    spans: JobSpans
    source: History | None = None  # where inferred limits and the drawn delay are read (the fit part)
    jobs: dict[bool, tuple[Job, ...]] = field(default_factory=dict)
    _delay: tuple[SchedulingDelay | None, str] | None = field(default=None, init=False, repr=False)

    def drawn_delay(self) -> tuple[SchedulingDelay | None, str]:
        """The delay drawn per job, read once from where the limits are read (``delay_fit``)."""
        if self._delay is None:
            self._delay = unexplained_delay(self.source or self.history, self.grouping)
        return self._delay

    def policy(self, knobs: Knobs) -> ReplayPolicy | None:
        if self.recorded is not None:
            return self.recorded
        if self.grouping is None or (knobs.limit_quantile is None and knobs.job_limit_quantile is None):
            return None
        return inferred_policy(
            self.history, self.grouping, knobs.limit_quantile, self.source, knobs.job_limit_quantile
        )

    def scenario(self, knobs: Knobs, horizon: float | None = None) -> tuple[Scenario, ReplayPolicy | None]:
        policy = self.policy(knobs)
        queued = policy is not None and bool(policy.assignment)
        if queued not in self.jobs:
            assert policy is not None or not queued
            self.jobs[queued] = tuple(history_jobs(self.history, policy.assignment if policy else None))
        scenario = history_scenario(
            self.history, knobs, jobs=self.jobs[queued],
            kueue=policy.objects if queued and policy else None,
            fair_sharing=bool(policy and policy.fair_sharing),
            job_limits=policy.job_limits if policy else (),
            fair_share=(policy and policy.fair_share) or recorded_fair_share(self.history),
            scheduling_delay=self.drawn_delay()[0] if knobs.scheduling_delay == UNEXPLAINED else None,
        )  # fmt: skip
        if horizon is not None:
            scenario = scenario.model_copy(update={"horizon_s": horizon})
        return scenario, policy


def _replay(scenario: Scenario, seed: int | None = None) -> Run:
    return run_one(resolve(scenario, label="<calibrated scenario>"), None, seed)


def _wait_score(
    measured: Measured, run: Run, tol: dict[str, float], scored: BoolArray | None = None
) -> dict[str, float]:
    """The fit's objective for a candidate: the worse of its KS distance and its p95 relative error
    (``p95_rel_error``), each over its tolerance, over the ``scored`` jobs (every job by default)."""
    simulated = Simulated.of(run, measured.ids, measured.gpus, measured.cpus)
    every = np.ones(len(measured.ids), dtype=bool) if scored is None else scored
    rows = {
        r.metric: r for r in compare_class("all", measured.side(every), simulated.side(every, measured), tol)
    }
    ks = rows["wait_ks"].error or 0.0
    rel = p95_rel_error(rows["wait_p95_s"])
    score = max(ks / tol["wait_ks"], (rel or 0.0) / tol["wait_quantile_rel"])
    out = {"wait_ks": ks, "score": score}
    if rel is not None:
        out["wait_p95_rel"] = rel
    return out


def p95_rel_error(p95: MetricRow) -> float | None:
    """|replayed − measured| / measured p95. A replayed p95 that is a lower bound (the replay left more
    than 5 % of the jobs waiting at its end) at or above the measured one is at least that far off and
    counts so — else a backlog that never clears would be judged by KS alone; any other lower bound, on
    either side, gives None (the p95 then counts only through KS)."""
    m, s = p95.measured, p95.simulated
    if m is None or s is None or p95.measured_lower_bound:
        return None
    if not p95.simulated_lower_bound:
        return abs(s - m) / m if m else (0.0 if s == m else 1.0)
    return (s - m) / m if m and s >= m else None


def _seed_scores(
    fit_history: History, measured: Measured, scenario: Scenario, candidate: Knobs, metric: str,
    tol: dict[str, float], scored: BoolArray | None, seeds: int,
) -> dict[str, float]:  # fmt: skip
    """A candidate's score: from its one replay when it draws nothing at random, else from the means over
    ``seeds`` seeds (the scenario's and the next ones, as the validation replays them) of its KS distance
    and p95 relative error (over the seeds that have one), as the validation judges the mean of each."""
    count = seeds if random_parts(scenario) else 1
    per_seed = []
    for k in range(count):
        run = _replay(scenario, None if k == 0 else scenario.seed + k)
        scores = _wait_score(measured, run, tol, scored)
        if metric == "image_pull_ks":
            scores["image_pull_ks"] = _pull_ks(fit_history, measured, run, candidate)
        per_seed.append(scores)
    if count == 1:
        return per_seed[0]
    keys = [k for k in ("wait_ks", "wait_p95_rel", "image_pull_ks") if any(k in s for s in per_seed)]
    out = {key: float(np.mean([s[key] for s in per_seed if key in s])) for key in keys}
    rel = out.get("wait_p95_rel", 0.0)
    out["score"] = max(out["wait_ks"] / tol["wait_ks"], rel / tol["wait_quantile_rel"])
    out["seeds"] = count
    return out


def _pull_ks(history: History, measured: Measured, run: Run, knobs: Knobs) -> float:
    return pull_row(history, run, measured.ids, knobs, DEFAULT_TOLERANCES).error or 0.0


def has_measured_pulls(history: History) -> bool:
    """Whether some job has a measured image pull longer than 0 (only then is a pull time worth fitting)."""
    pulls = job_columns(history).image_pull
    return bool(np.any(pulls[~np.isnan(pulls)] > 0))


def pull_grid(history: History) -> list[float]:
    """0 and a few quantiles (the largest included) of the measured positive image pulls, to the
    millisecond: under the first-pull-then-cached model a full pull is the longest one seen."""
    pulls = job_columns(history).image_pull
    pulls = pulls[~np.isnan(pulls) & (pulls > 0)]
    return sorted({0.0, *(round(float(np.quantile(pulls, q)), 3) for q in PULL_GRID_QUANTILES)})


def latency_grid(history: History) -> list[float]:
    """0 and a few quantiles of the measured positive waits, rounded to whole seconds, deduplicated."""
    cols = job_columns(history)
    waits = (cols.scheduled - cols.submit)[~np.isnan(cols.scheduled)]
    waits = waits[waits > 0]
    grid = {0.0}
    if len(waits):
        grid.update(float(round(np.quantile(waits, q))) for q in LATENCY_GRID_QUANTILES)
    return sorted(grid)


def queueing_grid(history: History) -> list[str]:
    """The queueing disciplines worth trying: kube-scheduler's own first (the default wins ties), strict
    FIFO, and EASY backfill when the history recorded requested wall times to plan with."""
    walltimes = history.jobs.column("walltime_s")
    backfill = ["easy-backfill"] if walltimes.null_count < len(walltimes) else []
    return ["best-effort-fifo", "fifo", *backfill]


def _grids(fit_history: History, setup: _Setup, background: bool) -> list[tuple[str, list[Any], str]]:
    grids: list[tuple[str, list[Any], str]] = []
    if setup.recorded is None and setup.grouping is not None:
        grids.append(("limit_quantile", list(LIMIT_GRID), "wait_ks"))
        grids.append(("job_limit_quantile", list(LIMIT_GRID), "wait_ks"))
    grids.append(("scheduling_latency_s", latency_grid(fit_history), "wait_ks"))
    if setup.drawn_delay()[0] is not None:  # the alternative to the constant: a delay drawn per job
        grids.append(("scheduling_delay", [None, UNEXPLAINED], "wait_ks"))
    grids.append(("queueing", queueing_grid(fit_history), "wait_ks"))
    if has_node_arrivals(fit_history):
        grids.append(("node_boot_time_s", list(BOOT_GRID_S), "wait_ks"))
    if background:  # background_fit: only where the record suggests it lists part of the work
        grids.append(("background_share", background_grid(unlisted_use(fit_history)), "wait_ks"))
    if has_measured_pulls(fit_history):
        grids.append(("image_pull_s", pull_grid(fit_history), "image_pull_ks"))
    return grids


def _fit(
    fit_history: History,
    setup: _Setup,
    horizon: float | None,
    tol: dict[str, float],
    progress: Callable[[int, int], None] | None,
    background: bool = False,
    scored: BoolArray | None = None,
    seeds: int = 1,
) -> tuple[Knobs, list[dict[str, Any]], list[str]]:
    """Each knob in turn on its grid, by the lowest score on the fit part: a candidate replaces the best
    so far only when it scores more than MIN_GAIN lower (ties and noise keep the earlier, simpler value).
    The policy knobs are fitted first (so a latency does not soak up waits a limit explains) and once more
    after the others, which they were chosen without. ``scored``: the jobs that score (every job: None);
    ``seeds``: how many seeds a candidate that draws at random is scored on (``_seed_scores``)."""
    first = _grids(fit_history, setup, background)
    grids = first + [g for g in first if g[0] in REFITTED]
    measured = Measured.of(fit_history)
    total = sum(len(g) for _, g, _ in grids) or 1
    knobs = Knobs()
    tried: list[dict[str, Any]] = []
    done = 0
    seen: dict[tuple[Knobs, str], dict[str, float]] = {}  # a candidate met again is not replayed again
    for knob, grid, metric in grids:
        best: tuple[float, Any] | None = None
        for value in grid:
            candidate = _candidate(knobs, knob, value)
            scores = seen.get((candidate, metric))
            if scores is None:
                scenario, _ = setup.scenario(candidate, horizon)
                scores = _seed_scores(fit_history, measured, scenario, candidate, metric, tol, scored, seeds)
                seen[(candidate, metric)] = scores
            tried.append({"knob": knob, "value": value, **scores})
            score = scores[metric] if metric == "image_pull_ks" else scores["score"]
            if best is None or score < best[0] * (1 - MIN_GAIN) - 1e-12:
                best = (score, value)
            done += 1
            if progress is not None:
                progress(done, total)
        assert best is not None
        knobs = _candidate(knobs, knob, best[1])
    return knobs, tried, [knob for knob, _, _ in first]


def _candidate(knobs: Knobs, knob: str, value: Any) -> Knobs:
    """The knobs with one changed; a drawn delay replaces the constant latency (an alternative to it)."""
    if knob == "scheduling_delay" and value is not None:
        return replace(knobs, scheduling_delay=value, scheduling_latency_s=0.0)
    return replace(knobs, **{knob: value})


def _flags(knobs: Knobs, fitted: list[str], fit_history: History, max_latency_s: float | None) -> list[str]:
    """A fitted latency that soaks up waiting: longer than the median compute or the user's bound."""
    if "scheduling_latency_s" not in fitted or knobs.scheduling_latency_s <= 0:
        return []
    cols = job_columns(fit_history)
    compute = job_times(cols, float(fit_history.end_s)).compute
    median = float(np.nanmedian(compute)) if np.any(~np.isnan(compute)) else None
    out = []
    latency = knobs.scheduling_latency_s
    if median is not None and latency > median:
        out.append(
            f"scheduling_latency_s {latency:g} s is longer than the median compute ({median:g} s): it "
            "absorbs waiting that capacity does not explain (policy, holds, user limits), not a latency"
        )
    if max_latency_s is not None and latency > max_latency_s:
        out.append(f"scheduling_latency_s {latency:g} s exceeds the bound --max-latency {max_latency_s:g} s")
    return out


def calibrate(
    history: History,
    tolerances: dict[str, float] | None = None,
    fit: bool = True,
    progress: Callable[[int, int], None] | None = None,
    fit_until: str | float | None = None,
    max_latency_s: float | None = None,
    seeds: int = DEFAULT_SEEDS,
) -> Calibration:
    """Diagnose, fit on the earlier part, replay the whole history and compare each part (module doc)."""
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    complete_nodes(history)  # a history without nodes cannot be replayed: say so before anything runs
    causes = diagnose_waits(history)
    split = split_instant(history, fit_until)
    end = float(history.end_s)
    fit_history = history_until(history, split) if split < end else history
    recorded = recorded_policy(history)
    fit_spans = JobSpans.of(fit_history)
    measured_fit = Measured.of(fit_history)
    notes: list[str] = []
    can_fit = fit and bool(np.any(measured_fit.known))
    if fit and not can_fit:
        notes.append("nothing fitted: the fit part has no measured wait to fit against")
    use = unlisted_use(history)
    offer_background, background_words = background_evidence(causes, use)
    notes.append(background_words)
    grouping = choose_grouping(fit_history, fit_spans) if recorded is None and can_fit else None
    scoring = fit_scoring(fit_history, grouping is not None)
    fit_setup = _Setup(
        fit_history, recorded_policy(fit_history) if recorded else None, grouping, fit_spans, scoring.source
    )
    if can_fit and scoring.method == "rolling-origin":
        notes.append(f"fit scored out of sample (rolling origin): {scoring.reason}")
    if can_fit:
        horizon = split if split < end else None
        knobs, tried, fitted = _fit(
            fit_history, fit_setup, horizon, tol, progress, offer_background, scoring.scored(measured_fit),
            min(seeds, FIT_SEEDS),
        )  # fmt: skip
    else:
        knobs, tried, fitted = Knobs(), [], []
    whole = _Setup(history, recorded, grouping, JobSpans.of(history), source=fit_history)
    scenario, policy = whole.scenario(knobs)
    run = _replay(scenario)
    measured = Measured.of(history)
    simulated = Simulated.of(run, measured.ids, measured.gpus, measured.cpus)
    earlier = measured.submit < split
    later = ~earlier
    replays = _seed_replays(scenario, simulated, measured, earlier, tol, seeds, notes)
    if progress is not None:
        progress(1, 1)
    rows = mean_rows([r.rows for r in replays])
    validation = (
        Validation(mean_rows([r.validation or [] for r in replays]), int(later.sum()))
        if later.any()
        else None
    )
    if validation is None:
        notes.append("no validation: --fit-until is at or after the last submission, nothing was held out")
    rows += _whole_rows(history, run, measured, knobs, tol, scenario, notes)
    notes += policy.notes if policy else []
    flags = _flags(knobs, fitted, fit_history, max_latency_s)
    if can_fit:
        chosen = knobs.scheduling_delay == UNEXPLAINED
        notes.append(delay_note(fit_setup.drawn_delay()[1], tried, chosen, MIN_GAIN))
    drawn = delay_flag(scenario, measured, earlier)
    flags += [drawn] if drawn else []
    if knobs.background_share > 0:
        flags.append(background_flag(knobs.background_share, background_words, measured=use is not None))
    elif "background_share" in fitted:
        notes.append(background_kept_at_zero([r for r in tried if r["knob"] == "background_share"], MIN_GAIN))
    result = Calibration(
        rows, knobs, tried, _disagreements(measured, simulated), scenario, run, notes, fitted,
        wait_causes=causes, policy=policy, validation=validation,
        fit_until_s=split if validation is not None else None, flags=flags,
        fit_scoring=scoring if can_fit else None, seed_replays=replays,
    )  # fmt: skip
    record = calibration_record(
        rows, validation.rows if validation else None, result.fit_until_s, flags, history.epoch
    )
    result.scenario = scenario.model_copy(update={"calibration": record})
    return result


def _seed_replays(
    scenario: Scenario, simulated: Simulated, measured: Measured, earlier: BoolArray, tol: dict[str, float],
    seeds: int, notes: list[str],
) -> list[SeedReplay]:  # fmt: skip
    """The replay under the scenario's seed (``simulated``: its side, already read) and, where the
    scenario draws at random, under the next ``seeds`` − 1 seeds; each seed's fit and validation rows."""
    parts = random_parts(scenario)
    count = seeds if parts else 1
    if not parts:
        notes.append(
            "replayed once: nothing in the calibrated scenario is drawn at random, every seed is alike"
        )
    elif seeds > 1:
        notes.append(
            f"replayed under {seeds} seeds ({scenario.seed}..{scenario.seed + seeds - 1}): the scenario "
            f"draws {' and '.join(parts)}; each verdict judges the mean over the seeds (replay/: seed "
            f"{scenario.seed})"
        )
    later = ~earlier
    out = []
    for k in range(count):
        seed = scenario.seed + k
        side = (
            simulated
            if k == 0
            else Simulated.of(_replay(scenario, seed), measured.ids, measured.gpus, measured.cpus)
        )
        out.append(SeedReplay(seed, compare(measured, side, earlier, tol),
                              compare(measured, side, later, tol) if later.any() else None))  # fmt: skip
    return out


def _whole_rows(
    history: History, run: Run, measured: Measured, knobs: Knobs, tol: dict[str, float],
    scenario: Scenario, notes: list[str],
) -> list[MetricRow]:  # fmt: skip
    """The rows that only make sense over the whole record (image pulls, cost) and the notes on it."""
    rows: list[MetricRow] = []
    cols = job_columns(history)
    held = job_times(cols, float(history.end_s)).held
    _, idle_notes = idle_capacity(history, cols.scheduled, held, cols.gpus, cols.nodes)
    notes += [n for n in idle_notes if "node list" in n] + complete_nodes(history)[1] + removal_notes(history)
    notes += partition_notes(history)
    skipped = sum(history.skipped.values())
    if skipped:
        notes.append(
            f"the import left out {skipped} record(s) (counts by reason in history.json); not replayed"
        )
    if has_measured_pulls(history):
        rows.append(pull_row(history, run, measured.ids, knobs, tol))
    cost = cluster_cost(history)
    if cost.total is None:
        notes.append("cost not compared: the history has no bill and no priced nodes")
    elif not any(p.price_per_hour > 0 for p in scenario.cluster.pools):
        notes.append(
            "cost not compared: no node has an instance type in the price catalogs, so the replay is free"
        )
    else:
        simulated_cost = summarize(run.result).cost_total
        err = rel_error(cost.total, simulated_cost)
        rows.append(MetricRow("all", "cost", cost.total, simulated_cost, err, "rel", tol["cost_rel"],
                              err <= tol["cost_rel"]))  # fmt: skip
    return rows


def _disagreements(measured: Measured, simulated: Simulated) -> list[dict[str, Any]]:
    """The jobs whose measured and simulated waits differ most."""
    gap = np.where(measured.known, np.abs(simulated.waits - measured.waits), 0.0)
    worst = np.argsort(-gap, kind="stable")[:DISAGREEMENTS]
    return [
        {"job_id": measured.ids[i], "job_class": str(measured.classes[i]),
         "measured_wait_s": float(measured.waits[i]), "measured_started": bool(measured.started[i]),
         "simulated_wait_s": float(simulated.waits[i]), "simulated_started": bool(simulated.started[i]),
         "gap_s": float(gap[i])}
        for i in worst if gap[i] > 0
    ]  # fmt: skip
