"""An experiment file: a base scenario, variants that each make one change, seeds, and metrics to compare.

Validated with pydantic; every problem names the file, the variant and the field. Each variant's scenario
is the base scenario's data with its one change applied and then validated in full, so a bad change is
caught before any run starts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fleetlab import __version__
from fleetlab.experiment.patch import PatchError, apply_patch
from fleetlab.experiment.pricing import MAX_PRICE
from fleetlab.experiment.replicates import Resampling
from fleetlab.experiment.scenario_diff import differences, differences_text, set_changes
from fleetlab.metrics.summary import Summary
from fleetlab.model.limits import MAX_SEED, Int, Seed
from fleetlab.model.scenario import Scenario
from fleetlab.model.units import Seconds
from fleetlab.spec.bounded import read_text_file
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.loader import parse_yaml, read_scenario_text
from fleetlab.spec.out_folder import safe_name

METRICS = tuple(f.name for f in fields(Summary) if f.name != "policy")
DEFAULT_METRICS = (
    "completion_mean_s",
    "queue_wait_mean_s",
    "queue_wait_p95_s",
    "cost_total",
    "cost_per_completed_job",
    "gpu_allocation_ratio",
)
CHANGE_KINDS = ("policy", "scheduler", "set")
EXPERIMENT_DOCS = "docs/commands.md#experiments"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")


class SeedRange(_Strict):
    """``{start: 1, count: 10}``: seeds start .. start+count-1."""

    start: Seed = 0
    count: Int = Field(gt=0, le=10_000)

    @model_validator(mode="after")
    def _last_fits(self) -> SeedRange:
        if self.start + self.count - 1 > MAX_SEED:
            raise ValueError(f"the last seed {self.start + self.count - 1} is past {MAX_SEED:,} (2**63 - 1)")
        return self


class VariantSpec(_Strict):
    """One variant: a name and exactly one change (none for the baseline)."""

    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    #: A placement preset for the whole scenario (``scheduler.policy``).
    policy: str | None = None
    #: Fields merged into the scenario's ``scheduler`` section (e.g. ``{gang_scheduling: false}``).
    scheduler: dict[str, Any] | None = None
    #: Dotted-path overrides, e.g. ``{cluster.pools[h100].count: 8}``.
    set: dict[str, Any] | None = None
    #: The variant makes several changes on purpose; it is then called a bundle wherever it appears.
    bundle: bool = False

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if any(c in value for c in "/\\") or value.startswith("."):
            raise ValueError("a variant name may not contain '/' or '\\' or start with '.'")
        return value

    @model_validator(mode="after")
    def _one_change(self) -> VariantSpec:
        given = [k for k in CHANGE_KINDS if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(
                f"states {len(given)} changes ({', '.join(given)}); a variant makes exactly one change "
                "(policy, scheduler or set) — split it into several variants"
            )
        if self.set is not None and not self.set:
            raise ValueError("set: give at least one dotted path, e.g. {cluster.pools[h100].count: 8}")
        return self

    def change_count(self) -> int:
        """How many changes the variant states: a policy is one, each scheduler field one, each ``set``
        path one (the same value at the same place in several entries of one list counting once)."""
        if self.scheduler is not None:
            return len(self.scheduler)
        if self.set is not None:
            return set_changes(self.set)
        return 1 if self.policy is not None else 0

    def change(self) -> str:
        """The change in words, e.g. ``policy=most-allocated``."""
        if self.policy is not None:
            return f"policy={self.policy}"
        if self.scheduler is not None:
            return "scheduler: " + ", ".join(f"{k}={_compact(v)}" for k, v in self.scheduler.items())
        if self.set is not None:
            return ", ".join(f"{k}={_compact(v)}" for k, v in self.set.items())
        return "(no change: the base scenario as written)"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if not isinstance(value, str) else value


class ReplicatesSpec(_Strict):
    """How seeds vary a recorded workload (experiment/replicates.py): ``auto`` resamples a trace or job
    list (a bootstrap by class and ``window`` of submit times, runtimes drawn per class, arrivals moved by up
    to ±``jitter``) and jitters node failure traces; ``off`` keeps them as given."""

    resample: Literal["auto", "off"] = "auto"
    window: Seconds = 3600.0
    jitter: Seconds = 300.0

    @field_validator("resample", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false

    def resampling(self) -> Resampling:
        """As the replicate transformation takes it."""
        return Resampling(self.resample, self.window, self.jitter)


class ExperimentSpec(_Strict):
    """What an experiment file declares."""

    name: str = "experiment"
    description: str = ""
    base: str = "default"
    baseline: str | None = None
    variants: list[VariantSpec] = Field(min_length=1)
    seeds: list[Seed] | SeedRange = Field(default_factory=lambda: [1, 2, 3])
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    replicates: ReplicatesSpec = ReplicatesSpec()
    #: Pool -> dollars per node-hour, an assumption applied to every variant (``--price`` of ``report``).
    prices: dict[str, float] = Field(default_factory=dict)

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, v in value.items() if not 0 <= v <= MAX_PRICE]
        if bad:
            raise ValueError(f"price of {', '.join(bad)} must be 0..{MAX_PRICE:g} dollars per node-hour")
        return value

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, value: list[str]) -> list[str]:
        unknown = [m for m in value if m not in METRICS]
        if unknown:
            raise ValueError(f"unknown metric(s) {', '.join(unknown)}; allowed: {', '.join(METRICS)}")
        if not value:
            raise ValueError("give at least one metric")
        return list(dict.fromkeys(value))

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[Seed] | SeedRange) -> list[Seed] | SeedRange:
        if isinstance(value, list):
            if not value:
                raise ValueError("give at least one seed")
            if len(set(value)) != len(value):
                raise ValueError("seeds must be distinct (the same seed twice is the same run)")
        return value

    @model_validator(mode="after")
    def _names(self) -> ExperimentSpec:
        names = [v.name for v in self.variants]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError(f"variant name(s) used twice: {', '.join(dups)}; names must be unique")
        folders = [safe_name(n).casefold() for n in names]
        if len(set(folders)) != len(folders):
            raise ValueError("variant names must differ in more than letter case and punctuation")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a variant; variants: {', '.join(names)}")
        return self

    def seed_list(self) -> list[int]:
        """The seeds as a list."""
        if isinstance(self.seeds, SeedRange):
            return list(range(self.seeds.start, self.seeds.start + self.seeds.count))
        return list(self.seeds)


@dataclass(frozen=True)
class Variant:
    """A variant with its patched, validated scenario data."""

    name: str
    change: str
    description: str
    scenario_data: dict[str, Any]
    base_dir: str | None
    #: How its replicates vary a recorded workload.
    resampling: Resampling = field(default_factory=Resampling)
    #: The changes it makes against the base scenario (scenario_diff), in words.
    differences: tuple[str, ...] = ()
    bundle: bool = False

    def fingerprint(self, seed: int) -> str:
        """Identifies a run's inputs: a finished run with another fingerprint is stale and is rerun."""
        parts = [self.scenario_data, seed, __version__, self.resampling.as_dict()]
        text = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: variants (baseline first) x seeds."""

    name: str
    description: str
    source: str
    base_label: str
    baseline: str
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    confidence: float
    #: The price assumptions given with ``prices`` (pool -> USD per node-hour).
    prices: dict[str, float] = field(default_factory=dict)
    #: The base scenario's file (None for a built-in scenario), where its calibration is looked for.
    base_file: str | None = None

    def variant(self, name: str) -> Variant:
        """The variant called ``name``."""
        return next(v for v in self.variants if v.name == name)


def variant_data(base: dict[str, Any], spec: VariantSpec) -> dict[str, Any]:
    """The base scenario's data with the variant's one change applied (not yet validated)."""
    data = dict(base)
    if spec.policy is not None:
        data = apply_patch(data, "scheduler.policy", spec.policy)
    elif spec.scheduler is not None:
        for key, value in spec.scheduler.items():
            data = apply_patch(data, f"scheduler.{key}", value)
    elif spec.set is not None:
        for path, value in spec.set.items():
            try:
                data = apply_patch(data, path, value)
            except PatchError as exc:
                raise PatchError(f"set.{path}: {exc}") from None
    return data


def _validate_variant(
    label: str, base: dict[str, Any], spec: VariantSpec, i: int
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The variant's scenario data and its changes in words; more than one change is refused unless the
    variant is marked ``bundle: true`` (one change at a time is what makes a verdict attributable)."""
    where = f"variants[{i}] ({spec.name!r})"
    try:
        data = variant_data(base, spec)
    except PatchError as exc:
        raise SpecError(label, [f"{where}: {exc}"]) from None
    data.pop("seed", None)
    try:
        Scenario.model_validate({**data, "seed": 0})
    except ValidationError as exc:
        prefix = f"{where}: {spec.change()} makes the scenario invalid: "
        raise SpecError(label, [prefix + p for p in problems_from_validation(exc)]) from None
    found = differences(base, data)
    count = spec.change_count()
    if count > 1 and not spec.bundle:
        raise SpecError(
            label,
            [
                f"{where}: makes {count} changes ({differences_text(found)}); a variant makes one change, "
                "so that its effect can be told apart — split it into several variants, or mark it "
                "`bundle: true` if the changes only make sense together (it is then called a bundle)"
            ],
        )
    return data, tuple(d.text() for d in found)


def load_experiment(path: str | Path) -> Experiment:
    """Read, validate and expand an experiment file; raises SpecError naming the variant and field."""
    file = Path(path)
    text = read_text_file(file, "file not found (give an experiment YAML file)")
    return experiment_from_data(parse_yaml(str(file), text), file)


def experiment_from_data(raw: Any, file: Path) -> Experiment:
    """Validate and expand experiment data read from ``file`` (a relative ``base`` is found next to it)."""
    try:
        spec = ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        problems = problems_from_validation(exc, docs=lambda _: EXPERIMENT_DOCS)
        raise SpecError(str(file), _name_variants(problems, raw)) from None
    base_path = spec.base
    if not Path(base_path).is_absolute() and (file.parent / base_path).exists():
        base_path = str(file.parent / base_path)
    base_label, base_text, base_dir = read_scenario_text(base_path)
    base = parse_yaml(base_label, base_text)
    for pool, price in spec.prices.items():
        try:
            base = apply_patch(base, f"cluster.pools[{pool}].price_per_hour", price)
        except PatchError as exc:
            raise SpecError(str(file), [f"prices.{pool}: {exc}"]) from None
    resampling = spec.replicates.resampling()
    variants = []
    for i, v in enumerate(spec.variants):
        data, changes = _validate_variant(str(file), base, v, i)
        variants.append(
            Variant(
                name=v.name,
                change=f"bundle of {v.change_count()}: {v.change()}" if v.bundle else v.change(),
                description=v.description,
                scenario_data=data,
                base_dir=str(base_dir) if base_dir is not None else None,
                resampling=resampling,
                differences=changes,
                bundle=v.bundle,
            )
        )
    baseline = spec.baseline or spec.variants[0].name
    ordered = tuple(sorted(variants, key=lambda v: v.name != baseline))
    return Experiment(
        name=spec.name,
        description=spec.description,
        source=str(file),
        base_label=base_label,
        baseline=baseline,
        variants=ordered,
        seeds=tuple(spec.seed_list()),
        metrics=tuple(spec.metrics),
        confidence=spec.confidence,
        prices=dict(spec.prices),
        base_file=str(Path(base_label).resolve()) if base_dir is not None else None,
    )


def _name_variants(problems: list[str], raw: dict[str, Any]) -> list[str]:
    """``variants[2].policy: ...`` -> ``variants[2] ('pack').policy: ...`` so the variant is named."""
    variants = raw.get("variants")
    if not isinstance(variants, list):
        return problems
    out = []
    for problem in problems:
        for i, item in enumerate(variants):
            tag = f"variants[{i}]"
            if problem.startswith(tag) and isinstance(item, dict) and "name" in item:
                problem = f"{tag} ({item['name']!r})" + problem[len(tag) :]
                break
        out.append(problem)
    return out
