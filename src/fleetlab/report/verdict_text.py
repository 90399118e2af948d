"""The verdict in words, for the terminal, the pages and JSON: one line per decision metric, each with its
paired interval (or "exact" when one replicate is the answer), so an inconclusive result never reads as
"no difference". The words are experiment/verdict.py's; docs/decision.md defines them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from fleetlab.experiment.decision_context import DecisionContext
from fleetlab.experiment.effects import MinEffect
from fleetlab.experiment.stats import Interval, Samples
from fleetlab.experiment.verdict import (
    BETTER,
    INCONCLUSIVE,
    MODEL_ERROR,
    NO_DATA,
    NO_PRACTICAL,
    TOO_FEW,
    WORSE,
    CandidateVerdict,
    Finding,
)
from fleetlab.report.metric_names import format_change, metric_label, scaled

CONFIDENCE = 0.95
STYLE = {"better": "bold green", "worse": "bold red", "mixed": "bold yellow"}


def _signed(metric: str, value: float) -> str:
    return format_change(metric, scaled(metric, value))


def _plus_minus(metric: str, value: float) -> str:
    """A floor such as ``±1.0m`` (``±0`` for none)."""
    text = _signed(metric, abs(value))
    return "±" + text[1:] if text[:1] in "+±" else text


def _relative(f: Finding) -> str:
    in_points = f.metric.endswith(("_pct", "ratio"))  # a relative change of a percentage misleads
    return "" if math.isnan(f.relative) or in_points else f"{f.relative:+.0%}, ".replace("-", "−")


def bounds_text(metric: str, interval: Interval) -> str:
    """``−2.1m .. +25.3m`` (``±$0.00`` when both bounds round to nothing)."""
    low, high = _signed(metric, interval.low), _signed(metric, interval.high)
    return low if low == high else f"{low} .. {high}"


def finding_text(f: Finding) -> str:
    """``queue wait mean +1.1m (+23%, interval +0.4m .. +1.8m)``, or ``(…, exact: seed 7)``."""
    size = _signed(f.metric, f.difference.mean)
    how = f"exact: {f.note}" if f.exact else f"interval {bounds_text(f.metric, f.difference)}"
    return f"{metric_label(f.metric)} {size} ({_relative(f)}{how})"


def finding_line(f: Finding) -> str:
    """One metric's verdict: its word, then its size and interval (the issue's "inconclusive (−X .. +Y)")."""
    label = metric_label(f.metric)
    size = _signed(f.metric, f.difference.mean)
    span = f"{size}, exact" if f.exact else bounds_text(f.metric, f.difference)
    extra = f"; {f.note}" if f.note and not f.exact else ""
    if f.word in (BETTER, WORSE):
        return f"{f.word}: {finding_text(f)}{extra}"
    if f.word == INCONCLUSIVE:
        if f.more_pairs is not None:
            more = f"; about {f.more_pairs} more paired seeds might decide it"
        else:
            more = "" if f.note else "; its mean sits on its minimum effect: more seeds will not settle it"
        return f"inconclusive ({span}): {label}{more}{extra}"
    if f.word == NO_PRACTICAL:
        floor = _plus_minus(f.metric, f.min_effect)
        return f"no practical difference ({span}; the minimum effect is {floor}): {label}"
    if f.word == MODEL_ERROR:
        err = _plus_minus(f.metric, f.model_error)
        return f"within model error ({span}; calibration's error is {err}): {label}"
    if f.word == NO_DATA:
        return f"no data: {label} (the baseline has a value, this column none)"
    assert f.word == TOO_FEW
    return f"not enough replicates: {label} {size}"


def verdict_summary(v: CandidateVerdict) -> str:
    """One word for the candidate."""
    if not v.deterministic and v.pairs < 2:
        return "not enough seeds to tell"
    if v.better and v.worse:
        return "mixed"
    if v.better:
        return BETTER
    if v.worse:
        return WORSE
    words = {f.word for f in v.findings}
    if words & {INCONCLUSIVE, TOO_FEW}:
        return INCONCLUSIVE
    if MODEL_ERROR in words:
        return MODEL_ERROR
    return NO_PRACTICAL if words else "nothing to compare"


def verdict_lines(v: CandidateVerdict, context: DecisionContext | None = None) -> list[str]:
    """The candidate and its word, then one line per decision metric (decided ones first)."""
    name = context.column_name(v.candidate) if context is not None else v.candidate
    order = {BETTER: 0, WORSE: 1, MODEL_ERROR: 2, NO_PRACTICAL: 3, INCONCLUSIVE: 4, TOO_FEW: 5, NO_DATA: 6}
    lines = [f"{name}: {verdict_summary(v)}"]
    if context is not None and v.candidate in context.bundles:
        lines.append(f"a bundle of changes, not one: {context.bundles[v.candidate]}")
    elif context is not None and context.changes.get(v.candidate):
        lines.append("change: " + "; ".join(context.changes[v.candidate]))
    lines.extend(finding_line(f) for f in sorted(v.findings, key=lambda f: order.get(f.word, 9)))
    return lines


def verdict_text(v: CandidateVerdict, context: DecisionContext | None = None) -> str:
    """The candidate's verdict as one paragraph."""
    head, *rest = verdict_lines(v, context)
    return head + (" — " + "; ".join(rest) if rest else "") + "."


def verdict_heading(baseline: str, n_seeds: int, context: DecisionContext, family: int = 0) -> list[str]:
    """What the verdict is measured against, and how (one or two lines)."""
    rules = context.rules
    pct = f"{rules.confidence:.0%}"
    if rules.deterministic:
        head = (
            f"Verdict against {baseline} — deterministic: one replicate is the answer "
            f"(the replicates differ only in {context.varied or 'tie-breaks'}); the first seed is "
            "compared exactly, and nothing counts as better or worse below its minimum effect:"
        )
        return [head]
    if n_seeds < 2:
        head = (
            f"Verdict against {baseline}: one seed gives no interval, so no change can be called real; "
            "run with --seeds 5 or more, or --seeds auto."
        )
    else:
        holm = f"Holm-corrected over {family} comparisons" if family else "every difference exact"
        head = (
            f"Verdict against {baseline} ({n_seeds} paired seeds, {pct} intervals, {holm}; nothing is "
            "better or worse by less than its minimum effect):"
        )
    notes = [f"replicates vary: {context.varied}"] if context.varied else []
    return [head, *notes, *([context.seeds_note] if context.seeds_note else [])]


def effect_text(metric: str, effect: MinEffect) -> str:
    """``max(1.0m, 10% of the baseline)`` in the metric's unit."""
    parts = [_plus_minus(metric, effect.absolute).lstrip("±")] if effect.absolute else []
    parts += [f"{effect.relative:.0%} of the baseline"] if effect.relative else []
    if not parts:
        return "0 (any change)"
    return parts[0] if len(parts) == 1 else f"max({parts[0]}, {parts[1]})"


def min_effects_line(metrics: Sequence[str], context: DecisionContext) -> str:
    """The minimum practical effects in force (``--min-effect`` changes them)."""
    parts = [
        f"{metric_label(m)} {effect_text(m, context.rules.min_effects.get(m, MinEffect()))}" for m in metrics
    ]
    return "minimum effects (--min-effect): " + "; ".join(parts)


def print_verdicts(
    console: Console, samples: Samples, baseline: str, context: DecisionContext
) -> list[CandidateVerdict]:
    """The verdict block: the heading, each candidate's word and its findings, the floors, the warnings."""
    from fleetlab.report.assumptions import print_assumptions

    print_assumptions(console, context)
    found = context.verdicts(samples, baseline)
    n_seeds = len(samples.get(baseline, {}))
    family = found[0].family if found else 0
    for i, line in enumerate(verdict_heading(baseline, n_seeds, context, family)):
        console.print(Text(line, style="bold" if i == 0 else "dim"))
    for v in found:
        for i, line in enumerate(verdict_lines(v, context)):
            style = STYLE.get(verdict_summary(v), "bold") if i == 0 else ""
            console.print(Text(("  " if i == 0 else "      ") + line, style=style))
    if found:
        metrics = tuple(f.metric for f in found[0].findings)
        console.print(Text(min_effects_line(metrics, context), style="dim"))
    for warning in context.warnings:
        console.print(Text(f"warning: {warning}", style="bold yellow"))
    console.print()
    return found


def _number(metric: str, x: float) -> float | None:
    return None if math.isnan(x) else scaled(metric, x)


def interval_json(interval: Interval, metric: str) -> dict[str, Any]:
    """An interval in display units (null for no value)."""
    return {
        "mean": _number(metric, interval.mean),
        "low": _number(metric, interval.low),
        "high": _number(metric, interval.high),
        "n": interval.n,
    }


def _finding_json(f: Finding) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "metric": f.metric,
        "label": metric_label(f.metric),
        "verdict": f.word,
        "text": finding_line(f),
        "difference": interval_json(f.difference, f.metric),
        "relative": num(f.relative),
        "exact": f.exact,
        "min_effect": _number(f.metric, f.min_effect),
        "model_error": _number(f.metric, f.model_error),
        "p_value": num(f.p_value),
        "p_holm": num(f.p_holm),
        "more_pairs_needed": f.more_pairs,
        "note": f.note,
    }


def verdict_json(v: CandidateVerdict, context: DecisionContext | None = None) -> dict[str, Any]:
    """A verdict as plain JSON: every decision metric with its word and interval."""
    return {
        "candidate": v.candidate,
        "baseline": v.baseline,
        "pairs": v.pairs,
        "deterministic": v.deterministic,
        "holm_family": v.family,
        "bundle": None if context is None else context.bundles.get(v.candidate),
        "summary": verdict_summary(v),
        "text": verdict_text(v, context),
        "findings": [_finding_json(f) for f in v.findings],
        "inconclusive": [f.metric for f in v.inconclusive],
    }
