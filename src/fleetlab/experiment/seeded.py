"""``compare`` over several seeds: every column (policy or scenario variant) on the same seeds, paired.

A seed fixes the workload draw and the tie-breaks, so each seed gives every column the same jobs; the
per-seed differences to the first column then measure the change itself (experiment/stats.py). Only the
first seed's runs are kept whole (for the detail tables and ``--out``); the others keep their summary.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from fleetlab.experiment.accounting import accounting_of, put_on_window
from fleetlab.experiment.pricing import with_prices
from fleetlab.experiment.replicates import Resampling, Variation, replicate, variation
from fleetlab.experiment.run import Run, compare
from fleetlab.experiment.stats import Samples
from fleetlab.experiment.verdict import CandidateVerdict
from fleetlab.metrics.summary import summarize
from fleetlab.model.policy_names import DEFAULT_COMPARE, SCENARIO_POLICY
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.profiles import UnknownPolicyError
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

DEFAULT_SEED_COUNT = 5
MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1


class SeedsError(ValueError):
    """A ``--seeds`` value that is neither a count nor a list of distinct seeds in range."""


#: ``--seeds auto``: start with this many paired seeds, add more until every decision metric is decided
#: or the cap (``auto:N``) is reached.
AUTO_START = 5
AUTO_CAP = 40


@dataclass(frozen=True)
class SeedPlan:
    """The seeds to run first, and for ``--seeds auto`` the most seeds it may grow to (None: fixed)."""

    seeds: tuple[int, ...]
    cap: int | None = None


def parse_seed_plan(text: str | None, first: int) -> SeedPlan:
    """``auto`` (``auto:N``: N the cap) -> five seeds from ``first`` that may grow; else ``parse_seeds``."""
    if text is not None and text.strip().lower().startswith("auto"):
        rest = text.strip()[4:]
        cap = AUTO_CAP
        if rest:
            try:
                cap = int(rest.removeprefix(":"))
            except ValueError:
                cap = -1
            if not rest.startswith(":") or not AUTO_START <= cap <= MAX_SEEDS:
                raise SeedsError(
                    f"--seeds {text[:40]!r}: give auto or auto:N with N {AUTO_START}..{MAX_SEEDS}"
                )
        if first + cap - 1 > MAX_SEED:
            raise SeedsError(f"--seeds {text[:40]!r}: seeds from {first} would pass {MAX_SEED}")
        return SeedPlan(tuple(range(first, first + AUTO_START)), cap)
    return SeedPlan(parse_seeds(text, first))


def parse_seeds(text: str | None, first: int) -> tuple[int, ...]:
    """``5`` -> five seeds from ``first``; ``7,8,9`` -> those seeds; None -> the default count."""
    if text is None:
        text = str(DEFAULT_SEED_COUNT)
    text = text.strip()
    allowed = (
        f"a count 1..{MAX_SEEDS} (seeds from {first} up), distinct seeds 0..{MAX_SEED} such as 7,8,9, or auto"
    )
    try:
        if "," not in text:
            count = int(text)
            if not 1 <= count <= MAX_SEEDS:
                raise SeedsError(f"--seeds {text!r}: out of range; give {allowed}")
            seeds = tuple(range(first, first + count))
        else:
            seeds = tuple(int(part) for part in text.split(","))
    except ValueError as exc:
        if isinstance(exc, SeedsError):
            raise
        raise SeedsError(f"--seeds {text[:40]!r}: not a number or list; give {allowed}") from None
    if len(seeds) > MAX_SEEDS or len(set(seeds)) != len(seeds) or any(not 0 <= s <= MAX_SEED for s in seeds):
        raise SeedsError(f"--seeds {text[:40]!r}: give {allowed}")
    return seeds


def seeds_to_add(found: Sequence[CandidateVerdict], n: int, cap: int) -> int:
    """How many paired seeds ``--seeds auto`` adds next: none when every decision metric is decided, or
    when no undecided one could be decided within the cap; else enough for the largest estimate the cap
    allows, at most doubling the seeds so the estimate is refined on the way (at least 2)."""
    open_ = [f for v in found for f in v.inconclusive]
    reachable = [f.more_pairs for f in open_ if f.more_pairs is not None and n + f.more_pairs <= cap]
    if not open_ or not reachable:
        return 0
    return min(cap - n, max(2, min(max(reachable), n)))


@dataclass(frozen=True)
class Columns:
    """What every seed runs: the files, the policies, how replicates vary a recorded workload, and the
    price assumptions given on the command line (pool -> USD per node-hour)."""

    files: tuple[str | None, ...]
    policies: tuple[str, ...]
    resampling: Resampling = field(default_factory=Resampling)
    prices: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class SeededComparison:
    """Columns x seeds: the first seed's whole runs and every seed's summary figures."""

    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    first_runs: tuple[Run, ...]
    #: column -> seed -> summary field -> value (NaN where the summary has null)
    samples: Samples
    title: str
    #: every column's scenario per label (its first replicate), for the report's job classes and placement
    scenarios: dict[str, ResolvedScenario]
    #: What each column's replicates vary.
    variations: dict[str, Variation] = field(default_factory=dict)
    #: ``horizon`` or ``latest end``: what the common accounting windows were.
    window_source: str = ""
    #: For ``--seeds auto``: how the seeds grew and why they stopped.
    auto_note: str = ""
    #: Column -> the scenario file it ran (None: the built-in default).
    files: dict[str, str | None] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        """The first column: every difference is taken against it."""
        return self.labels[0]


def _figures(run: Run) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in summarize(run.result).as_dict().items():
        if key != "policy":
            out[key] = math.nan if value is None else float(value)
    return out


def _variant_label(resolved: ResolvedScenario, run: Run, n_policies: int) -> str:
    name = resolved.scenario.name
    return name if n_policies == 1 else f"{name}:{run.label}"


def _unique(label: str, taken: Sequence[str]) -> str:
    out, n = label, 2
    while out in taken:
        out, n = f"{label}#{n}", n + 1
    return out


def load_column(file: str | None, seed: int, columns: Columns) -> ResolvedScenario:
    """One file's scenario for one seed: the given prices applied, then its replicate for that seed."""
    resolved = load(file, seed)
    names = {p.name for p in resolved.scenario.cluster.pools}
    given = {pool: price for pool, price in columns.prices if pool in names}
    if given:
        resolved = resolved.model_copy(update={"scenario": with_prices(resolved.scenario, given)})
    return replicate(resolved, seed, columns.resampling)


def _seed_columns(
    columns: Columns, seed: int, progress: Callable[[str, int, int], None] | None = None
) -> list[tuple[str, Run, ResolvedScenario, str | None]]:
    """Every file under every policy on one seed, labelled as the columns are."""
    out: list[tuple[str, Run, ResolvedScenario, str | None]] = []
    files = columns.files
    for file in files:
        resolved = load_column(file, seed, columns)

        def tagged(label: str, done: int, total: int) -> None:
            if progress is not None:
                progress(f"{label} seed {seed}", done, total)

        for run in compare(resolved, columns.policies, None, tagged):
            label = run.label if len(files) == 1 else _variant_label(resolved, run, len(columns.policies))
            label = _unique(label, [x[0] for x in out])
            out.append((label, replace(run, label=label), resolved, file))
    return out


def column_figures(
    columns: Sequence[tuple[str, Run, ResolvedScenario, str | None]],
) -> tuple[list[tuple[str, dict[str, float]]], str]:
    """One seed's summary figures per column, with every column's cost over the seed's common accounting
    window (experiment/accounting.py), and what that window is."""
    figures = {label: _figures(run) for label, run, _, _ in columns}
    source = put_on_window(figures, {label: accounting_of(run.result) for label, run, _, _ in columns})
    return list(figures.items()), source


def seed_figures(task: tuple[Columns, int]) -> tuple[list[tuple[str, dict[str, float]]], str] | str:
    """One seed's summary figures per column (runs in a worker); a bad input comes back as its message."""
    columns, seed = task
    try:
        return column_figures(_seed_columns(columns, seed))
    except (SpecError, UnknownPolicyError) as exc:
        return str(exc)


def columns_for(
    files: Sequence[str | None],
    policies: Sequence[str] | None,
    resampling: Resampling | None = None,
    prices: dict[str, float] | None = None,
) -> Columns:
    """The columns of a comparison: each file under each policy (compare's four presets for one file, each
    file's own policy for several)."""
    default = DEFAULT_COMPARE if len(files) == 1 else (SCENARIO_POLICY,)
    return Columns(
        tuple(files), tuple(dict.fromkeys(policies or default)), resampling or Resampling(),
        tuple(sorted((prices or {}).items())),
    )  # fmt: skip


def compare_seeds(
    files: Sequence[str | None],
    policies: Sequence[str] | None,
    seeds: Sequence[int],
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = None,
    columns: Columns | None = None,
    more: Callable[[SeededComparison], int] | None = None,
) -> SeededComparison:
    """Run every file under every policy on every seed; raises SpecError / UnknownPolicyError.

    The first seed runs here (its runs are kept whole); the other seeds run in worker processes at the
    same time and send back their summary figures only. ``more(comparison so far)``, when given, is asked
    after each round how many seeds to add (``--seeds auto``; 0 stops)."""
    spec = columns or columns_for(files, policies)
    seeds = list(seeds)
    workers = max(1, min(workers or os.cpu_count() or 1, max(len(seeds) - 1, 1)))
    sources: set[str] = set()
    with _pool(workers if len(seeds) > 1 or more is not None else 0) as pool:
        rest = [(spec, seed) for seed in seeds[1:]]
        futures = [pool.submit(seed_figures, task) for task in rest] if pool is not None else []
        first = _seed_columns(spec, seeds[0], progress)
        figures, source = column_figures(first)
        sources.add(source)
        samples: dict[str, dict[int, dict[str, float]]] = {label: {seeds[0]: f} for label, f in figures}
        _collect(samples, sources, rest, futures)
        while more is not None:
            add = more(_comparison(spec, seeds, first, samples, sources))
            if add <= 0:
                break
            new = list(range(seeds[-1] + 1, seeds[-1] + 1 + add))
            seeds += new
            batch = [(spec, seed) for seed in new]
            _collect(samples, sources, batch, [pool.submit(seed_figures, t) for t in batch] if pool else [])
    return _comparison(spec, seeds, first, samples, sources)


def _comparison(
    spec: Columns,
    seeds: Sequence[int],
    first: Sequence[tuple[str, Run, ResolvedScenario, str | None]],
    samples: dict[str, dict[int, dict[str, float]]],
    sources: set[str],
) -> SeededComparison:
    resolved = first[0][2]
    if len(spec.files) == 1:
        nodes = resolved.scenario.cluster.node_count
        head = f"{resolved.scenario.name}: {len(resolved.jobs)} jobs on {nodes} nodes"
    else:
        head = f"{len(spec.files)} scenario variants"
    return SeededComparison(
        labels=tuple(samples),
        seeds=tuple(seeds),
        first_runs=tuple(run for _, run, _, _ in first),
        samples=samples,
        title=f"{head}, {_seed_words(seeds)}",
        scenarios={label: r for label, _, r, _ in first},
        variations={label: variation(r.scenario, len(r.jobs), spec.resampling) for label, _, r, _ in first},
        window_source=" / ".join(sorted(s for s in sources if s)),
        files={label: file for label, _, _, file in first},
    )


def auto_note(found: Sequence[CandidateVerdict], n: int, cap: int) -> str:
    """What ``--seeds auto`` did, for the verdict's heading."""
    open_ = [f for v in found for f in v.inconclusive]
    head = f"--seeds auto: {AUTO_START} → {n} paired seeds (at most {cap})"
    if not open_:
        return f"{head}: every decision metric is decided"
    needs = [f.more_pairs for f in open_ if f.more_pairs is not None]
    if len(needs) < len(open_):
        return f"{head}: {len(open_)} still inconclusive, some beyond any number of seeds worth running"
    return f"{head}: {len(open_)} still inconclusive; about {max(needs)} more paired seeds would decide them"


def _collect(
    samples: dict[str, dict[int, dict[str, float]]],
    sources: set[str],
    tasks: Sequence[tuple[Columns, int]],
    futures: Sequence[Any],
) -> None:
    """Each task's figures into ``samples`` (from its future, or run here when there is no pool)."""
    for i, task in enumerate(tasks):
        got = futures[i].result() if futures else seed_figures(task)
        if isinstance(got, str):
            raise SpecError(f"seed {task[1]}", [got])
        figures, source = got
        sources.add(source)
        for label, values in figures:
            samples.setdefault(label, {})[task[1]] = values


@contextmanager
def _pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes (spawned: no fork of a process with progress threads), or None for none."""
    if workers <= 1:
        yield None
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _seed_words(seeds: Sequence[int]) -> str:
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}–{seeds[-1]} ({len(seeds)}, paired)"
    return f"seeds {', '.join(map(str, seeds))} ({len(seeds)}, paired)"
