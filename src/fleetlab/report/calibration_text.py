"""Why jobs waited and what the calibration did, in words: the lines ``fleetlab calibrate`` prints before
its table and the HTML page shows first. They read calibration.json's own fields, so a payload read back
gives the same words."""

from __future__ import annotations

from typing import Any

#: A capacity share at or below this says the waits are not capacity waits.
NOT_CAPACITY = 0.10
SOURCES = {
    "kueue": "the recorded Kueue objects",
    "resource-quota": "the recorded namespace ResourceQuotas",
    "slurm": "the recorded Slurm limits",
    "inferred": "inferred from the record",
}
#: Inferred limits printed (the groups that waited longest); calibration.json has all of them.
SHOWN_LIMITS = 10


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def cause_lines(causes: dict[str, Any], policy: dict[str, Any] | None = None) -> list[str]:
    """The record's own account of its waits (calibration.json ``wait_causes``), then what the replay
    takes from it (``policy``)."""
    row = next((r for r in causes["rows"] if r["group_by"] == "all"), None)
    if row is None or row["jobs"] == 0 or row["wait_hours"] <= 0:
        unmeasured = causes.get("wait_unmeasured", 0)
        return [f"no waiting to explain: {unmeasured} job(s) have no measured wait"] if unmeasured else []
    lines = [f"waiting: {row['wait_hours']:,.1f} h over {row['waited']} of {row['jobs']} jobs"]
    capacity = row["capacity_explained_wait_share"]
    if capacity is None:
        lines.append("capacity: not measured (the history has no node list)")
    else:
        lines.append(
            f"capacity explains {_pct(capacity)} of it (capacity_explained_wait_share): for the rest the "
            "recorded running work left room for the waiting job on its nodes"
        )
    shares = [
        ("same_user_running_share", "another job of the same user was running (a per-user limit shows so)"),
        ("same_team_running_share", "another job of the same team was running"),
        ("behind_earlier_share", "an earlier job of the same queue was still waiting"),
        ("nothing_running_share", "nothing at all was running (an outage, a reservation or a hold)"),
        ("node_down_share", "some of the job's nodes were down or drained"),
    ]
    for key, words in shares:
        if row.get(key) is not None and row[key] > 0:
            lines.append(f"  for {_pct(row[key])} of it {words}")
    if row["cancelled_pending_jobs"]:
        lines.append(
            f"  {row['cancelled_pending_jobs']} job(s) were cancelled while pending: "
            f"{_pct(row['cancelled_pending_share'] or 0.0)} of the waiting ended by a deletion, not a start"
        )
    for name, counts in causes.get("concentration", {}).items():
        lines.append(f"  {counts['carry_95']} of {counts['waited']} {name}s carry 95 % of the waiting time")
    if causes.get("wider_than_any_node"):
        lines.append(
            f"  {causes['wider_than_any_node']} job(s) ask in one pod for more than any node has (as "
            "recorded): replayed as gangs of node-sized pods"
        )
    if causes.get("wait_unmeasured"):
        lines.append(
            f"  {causes['wait_unmeasured']} job(s) have no measured wait (left out of the wait figures)"
        )
    lines += _verdict(capacity, causes, policy)
    return lines


def _verdict(capacity: float | None, causes: dict[str, Any], policy: dict[str, Any] | None) -> list[str]:
    if capacity is None or capacity > NOT_CAPACITY:
        return []
    lacks: list[str] = []
    source = (policy or {}).get("source", "none")
    if source in ("none", "inferred"):
        lacks.append("its queueing policy (no Kueue objects, quotas or scheduler limits)")
    peak = causes.get("peak_use_share")
    if peak is not None and peak < 0.5:
        what = causes.get("peak_use_resource", "gpu").upper()
        lacks.append(
            f"the rest of the cluster's work (the listed jobs never held more than {_pct(peak)} of the "
            f"nodes' {what}s at once)"
        )
    out = [
        "verdict: the measured waits are not capacity waits — no replay of capacity alone can reproduce them"
    ]
    if lacks:
        out.append("the record lacks " + "; and ".join(lacks))
    return out


def policy_lines(policy: dict[str, Any] | None) -> list[str]:
    """What the replay's queueing comes from, and the evidence for inferred limits."""
    if not policy or policy.get("source") in (None, "none"):
        return ["policy: none replayed (every job goes straight to the scheduler)"]
    source = SOURCES[policy["source"]]
    grouping = f", a ClusterQueue per {policy['grouping']}" if policy.get("grouping") else ""
    queues = f"{policy['cluster_queues']} ClusterQueue(s), {policy['jobs_queued']} jobs"
    lines = [f"policy: {source}{grouping} ({queues})"]
    limits = sorted(policy.get("limits", []), key=lambda c: (-c["wait_hours"], c["group"], c["resource"]))
    for limit in limits[:SHOWN_LIMITS]:
        explained = limit["explained_share"]
        lines.append(
            f"  {limit['group_by']} {limit['group']}: {limit['resource']} <= {limit['value']:g}; reached "
            f"{_pct(limit['reached_share'])} of its busy time; explains "
            f"{'—' if explained is None else _pct(explained)} of its {limit['wait_hours']:,.1f} h of waiting"
        )
    if len(limits) > SHOWN_LIMITS:
        lines.append(f"  and {len(limits) - SHOWN_LIMITS} more limit(s) in calibration.json (policy.limits)")
    return lines


#: The figures each part's seed line states: (metric, words).
SEED_FIGURES = (("wait_ks", "KS"), ("wait_p95_s", "p95 error"))


def seed_lines(summary: list[dict[str, Any]]) -> list[str]:
    """Per part, the wait KS and p95 error over the seeds (calibration.json ``seed_summary``, class
    ``all``): the mean, min–max and how many seeds are within the tolerance — never one seed's figure."""
    lines = []
    for part in ("fit", "validation"):
        figures = []
        for metric, words in SEED_FIGURES:
            key = (part, "all", metric)
            row = next((r for r in summary if (r["part"], r["job_class"], r["metric"]) == key), None)
            if row is None or row["mean"] is None:
                continue
            unit = " s" if metric != "wait_ks" else ""
            fmt = "{:.3f}" if metric == "wait_ks" else "{:,.0f}"
            tolerance = f"{fmt.format(row['tolerance'])}{unit}"
            if len(row["seeds"]) == 1:  # replayed once: nothing drawn at random, there is no spread
                within = "within" if row["within_seeds"] else "not within"
                figures.append(f"{words} {fmt.format(row['mean'])}{unit} (one replay), {within} {tolerance}")
                continue
            figures.append(
                f"{words} mean {fmt.format(row['mean'])}{unit} ({fmt.format(row['min'])}–"
                f"{fmt.format(row['max'])}{unit}), {row['within_seeds']} of {len(row['seeds'])} seed(s) "
                f"within {tolerance}"
            )
        if figures:
            lines.append(f"{part}: " + "; ".join(figures))
    return lines
