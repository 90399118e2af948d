"""What places the work, in one file: every pool's node labels and taints, and every job class's
tolerations, nodeSelector and required node affinity.

A policy that keeps small jobs off the big GPUs is a taint on those nodes and a toleration on the jobs
that may use them; without both in the exported artefacts a reader cannot apply or audit the placement
the simulation assumed. ``placement-rules.md`` lists them with the ``kubectl label`` / ``kubectl taint``
commands that put the pool side on real nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetlab.model.cluster import NodePool
from fleetlab.model.job import Job
from fleetlab.model.kube import Affinity, describe_taint, describe_toleration
from fleetlab.model.scenario import Scenario

PLACEMENT_FILE = "placement-rules.md"


def affinity_text(affinity: Affinity | None) -> str:
    """Required node affinity as ``key op values`` terms, ORed with `` | ``; "" without any."""
    node = affinity.node_affinity if affinity is not None else None
    if node is None or node.required is None:
        return ""
    terms = []
    for term in node.required.node_selector_terms:
        parts = [f"{r.key} {r.operator} {','.join(r.values)}".strip() for r in term.match_expressions]
        parts += [f"{r.key} {r.operator} {','.join(r.values)}".strip() for r in term.match_fields]
        terms.append(" & ".join(parts))
    return " | ".join(terms)


def tolerations_text(job: Job) -> str:
    """The job's tolerations, ``; ``-separated (see ``describe_toleration``)."""
    return "; ".join(describe_toleration(t) for t in job.tolerations)


def selector_text(selector: dict[str, str]) -> str:
    """A nodeSelector as ``k=v; k=v`` in key order."""
    return "; ".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _pool_rows(pools: Sequence[NodePool]) -> list[str]:
    lines = ["| pool | nodes | GPU | labels | taints |", "|---|---|---|---|---|"]
    commands: list[str] = []
    for pool in pools:
        labels = selector_text(pool.labels) or "—"
        taints = "; ".join(describe_taint(t) for t in pool.taints) or "—"
        gpu = f"{pool.gpus_per_node} x {pool.gpu_model}" if pool.gpu_model else "—"
        lines.append(f"| {pool.name} | {pool.count} | {gpu} | {labels} | {taints} |")
        if pool.labels:
            pairs = " ".join(f"{k}={v}" for k, v in sorted(pool.labels.items()))
            commands.append(f"kubectl label node NODE {pairs}   # each node of pool {pool.name}")
        for taint in pool.taints:
            commands.append(
                f"kubectl taint node NODE {describe_taint(taint)}   # each node of pool {pool.name}"
            )
    if commands:
        lines += ["", "```sh", *commands, "```"]
    return lines


def _job_rows(scenario: Scenario) -> list[str]:
    header = ["| jobs | class | team | tolerations | nodeSelector | required node affinity |"]
    header.append("|---|---|---|---|---|---|")
    generator = scenario.workload.generator
    if generator is not None:
        rows = [
            (
                f"generator class {c.name}",
                c.job_class.value,
                ", ".join(c.teams),
                "; ".join(describe_toleration(t) for t in c.tolerations),
                selector_text(c.node_selector),
                affinity_text(c.affinity),
            )
            for c in generator.classes
        ]
    else:
        groups: dict[tuple[str, str, str, str, str], int] = {}
        for job in scenario.workload.jobs or ():
            key = (
                job.job_class.value,
                job.team,
                tolerations_text(job),
                selector_text(job.node_selector),
                affinity_text(job.affinity),
            )
            groups[key] = groups.get(key, 0) + 1
        rows = [(f"{n} job(s)", *key) for key, n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))]
    if not rows:
        return ["The workload comes from a trace; its tolerations and selectors are the trace's own columns."]
    return header + [f"| {' | '.join(cell or '—' for cell in row)} |" for row in rows]


def placement_rules(scenario: Scenario) -> str:
    """The ``placement-rules.md`` text: pools (labels, taints, commands) and the inline jobs grouped, or
    the generator's classes, with their tolerations, selectors and required affinity."""
    lines = [f"# What places the work in scenario {scenario.name}", "", "## Node pools", ""]
    lines += _pool_rows(scenario.cluster.pools)
    lines += ["", "## Jobs", ""]
    lines += _job_rows(scenario)
    return "\n".join(lines) + "\n"
