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
from dataclasses import dataclass, replace

from fleetlab.experiment.run import SCENARIO_POLICY, Run, compare
from fleetlab.experiment.stats import Samples
from fleetlab.metrics.summary import summarize
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.profiles import UnknownPolicyError
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

DEFAULT_SEED_COUNT = 5
MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1


class SeedsError(ValueError):
    """A ``--seeds`` value that is neither a count nor a list of distinct seeds in range."""


def parse_seeds(text: str | None, first: int) -> tuple[int, ...]:
    """``5`` -> five seeds from ``first``; ``7,8,9`` -> those seeds; None -> the default count."""
    if text is None:
        text = str(DEFAULT_SEED_COUNT)
    text = text.strip()
    allowed = f"a count 1..{MAX_SEEDS} (seeds from {first} up) or distinct seeds 0..{MAX_SEED} such as 7,8,9"
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


@dataclass(frozen=True)
class SeededComparison:
    """Columns x seeds: the first seed's whole runs and every seed's summary figures."""

    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    first_runs: tuple[Run, ...]
    #: column -> seed -> summary field -> value (NaN where the summary has null)
    samples: Samples
    title: str
    #: every column's scenario per label, for the report's job classes and placement conditions
    scenarios: dict[str, ResolvedScenario]

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


def _seed_columns(
    files: Sequence[str | None],
    policies: Sequence[str],
    seed: int,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, Run, ResolvedScenario]]:
    """Every file under every policy on one seed, labelled as the columns are."""
    out: list[tuple[str, Run, ResolvedScenario]] = []
    for file in files:
        resolved = load(file, seed)

        def tagged(label: str, done: int, total: int) -> None:
            if progress is not None:
                progress(f"{label} seed {seed}", done, total)

        for run in compare(resolved, policies, None, tagged):
            label = run.label if len(files) == 1 else _variant_label(resolved, run, len(policies))
            label = _unique(label, [x for x, _, _ in out])
            out.append((label, replace(run, label=label), resolved))
    return out


def seed_figures(
    task: tuple[tuple[str | None, ...], tuple[str, ...], int],
) -> list[tuple[str, dict[str, float]]] | str:
    """One seed's summary figures per column (runs in a worker); a bad input comes back as its message."""
    files, policies, seed = task
    try:
        return [(label, _figures(run)) for label, run, _ in _seed_columns(files, policies, seed)]
    except (SpecError, UnknownPolicyError) as exc:
        return str(exc)


def compare_seeds(
    files: Sequence[str | None],
    policies: Sequence[str] | None,
    seeds: Sequence[int],
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = None,
) -> SeededComparison:
    """Run every file under every policy on every seed; raises SpecError / UnknownPolicyError.

    The first seed runs here (its runs are kept whole); the other seeds run in worker processes at the
    same time and send back their summary figures only."""
    from fleetlab.experiment.run import DEFAULT_COMPARE

    default = DEFAULT_COMPARE if len(files) == 1 else (SCENARIO_POLICY,)
    chosen = tuple(dict.fromkeys(policies or default))
    rest = [(tuple(files), chosen, seed) for seed in seeds[1:]]
    workers = max(1, min(workers or os.cpu_count() or 1, len(rest)))
    with _pool(workers if rest else 0) as pool:
        futures = [pool.submit(seed_figures, task) for task in rest] if pool is not None else []
        columns = _seed_columns(files, chosen, seeds[0], progress)
        samples: dict[str, dict[int, dict[str, float]]] = {
            label: {seeds[0]: _figures(run)} for label, run, _ in columns
        }
        for i, task in enumerate(rest):
            got = futures[i].result() if futures else seed_figures(task)
            if isinstance(got, str):
                raise SpecError(f"seed {task[2]}", [got])
            for label, figures in got:
                samples.setdefault(label, {})[task[2]] = figures
    first_runs = tuple(run for _, run, _ in columns)
    scenarios = {label: resolved for label, _, resolved in columns}
    if len(files) == 1:
        resolved = columns[0][2]
        nodes = resolved.scenario.cluster.node_count
        head = f"{resolved.scenario.name}: {len(resolved.jobs)} jobs on {nodes} nodes"
    else:
        head = f"{len(files)} scenario variants"
    return SeededComparison(
        labels=tuple(samples),
        seeds=tuple(seeds),
        first_runs=first_runs,
        samples=samples,
        title=f"{head}, {_seed_words(seeds)}",
        scenarios=scenarios,
    )


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
