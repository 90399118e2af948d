"""Grant and voucher evidence: what a bill says each project spent in each support period, beside the run's
estimate, with the bill lines tied to the jobs they paid for where the bill carries a job label.

Support programmes (public compute grants, AI vouchers) ask for cost evidence per project and per support
period: the amount billed, the credits applied, the GPU-hours bought and the work done with them. A bill line
belongs to the project its ``project_label`` names (a namespace label such as GKE's ``k8s-namespace``, a team
label, any key the user chooses; lines without it are "(unallocated)") and to each period it overlaps, in
proportion to the overlap, as everywhere in reconciliation. The estimate side is the ledger's rows of the same
project (the job's team) over the same window. A line whose ``job_label`` names a job of the run is linked to
that job; per job: the billed dollars of its lines and the ledger's dollars for the job.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fleetlab.cost.bill_lines import category, gpu_hours
from fleetlab.cost.ledger import UNALLOCATED
from fleetlab.spec.billing_export import BillRow


@dataclass(frozen=True)
class SupportPeriod:
    """A named window [start, end) in UTC."""

    name: str
    start: datetime
    end: datetime


@dataclass
class EvidenceRow:
    """One project in one support period."""

    project: str
    period: SupportPeriod
    bill_usd: float = 0.0
    credits_usd: float = 0.0
    bill_lines: int = 0
    gpu_hours_billed: float = 0.0
    estimate_usd: float = 0.0
    gpu_hours_estimated: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``net_usd`` is the billed amount after credits."""
        return {
            "project": self.project,
            "period": self.period.name,
            "period_start": self.period.start.isoformat(),
            "period_end": self.period.end.isoformat(),
            "bill_usd": self.bill_usd,
            "credits_usd": self.credits_usd,
            "net_usd": self.bill_usd + self.credits_usd,
            "bill_lines": self.bill_lines,
            "gpu_hours_billed": self.gpu_hours_billed,
            "estimate_usd": self.estimate_usd,
            "gpu_hours_estimated": self.gpu_hours_estimated,
        }


@dataclass
class JobLink:
    """Bill lines tied to one job of the run by its job label."""

    job: str
    project: str
    bill_usd: float = 0.0
    bill_lines: int = 0
    estimate_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"job": self.job, "project": self.project, "bill_usd": self.bill_usd,
                "bill_lines": self.bill_lines, "estimate_usd": self.estimate_usd}  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    """Evidence rows by project x support period, the job links, and the bill lines no job label tied."""

    project_label: str
    job_label: str | None
    rows: list[EvidenceRow]
    jobs: list[JobLink]
    unlinked_lines: int
    outside_usd: float  # billed amounts outside every support period

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "project_label": self.project_label,
            "job_label": self.job_label,
            "rows": [r.as_dict() for r in self.rows],
            "jobs": [j.as_dict() for j in self.jobs],
            "unlinked_lines": self.unlinked_lines,
            "outside_periods_usd": self.outside_usd,
        }


def _overlap(start: datetime, end: datetime, period: SupportPeriod) -> float:
    """The share of [start, end) inside the period (a zero-length line counts where it starts)."""
    if end <= start:
        return 1.0 if period.start <= start < period.end else 0.0
    inside = (min(end, period.end) - max(start, period.start)).total_seconds()
    return max(inside, 0.0) / (end - start).total_seconds()


def grant_evidence(
    bill: Sequence[BillRow],
    ledger: dict[str, list[Any]],
    start: datetime,
    periods: Sequence[SupportPeriod],
    project_label: str,
    job_label: str | None = None,
) -> Evidence:
    """Evidence per project and support period (see the module docstring); ``start`` is the run's t=0."""
    rows: dict[tuple[str, int], EvidenceRow] = {}

    def row(project: str, index: int) -> EvidenceRow:
        key = (project, index)
        if key not in rows:
            rows[key] = EvidenceRow(project, periods[index])
        return rows[key]

    outside = 0.0
    for line in bill:
        project = line.labels.get(project_label) or UNALLOCATED
        hours = gpu_hours(line) if category(line) == "gpu" else None
        placed = 0.0
        for index, period in enumerate(periods):
            share = _overlap(line.start, line.end, period)
            if share <= 0:
                continue
            placed += share
            entry = row(project, index)
            entry.bill_usd += share * line.cost_usd
            entry.credits_usd += share * line.credits_usd
            entry.bill_lines += 1
            entry.gpu_hours_billed += share * (hours or 0.0)
        outside += (1.0 - min(placed, 1.0)) * (line.cost_usd + line.credits_usd)
    for i in range(len(ledger["cost_usd"])):
        begin = start + timedelta(seconds=float(ledger["period_start_s"][i]))
        finish = start + timedelta(seconds=float(ledger["period_end_s"][i]))
        project = ledger["project"][i] or UNALLOCATED
        gpu = float(ledger["unit_hours"][i]) if ledger["unit"][i] == "gpu" else 0.0
        for index, period in enumerate(periods):
            share = _overlap(begin, finish, period)
            if share > 0:
                entry = row(project, index)
                entry.estimate_usd += share * float(ledger["cost_usd"][i])
                entry.gpu_hours_estimated += share * gpu
    jobs, unlinked = _job_links(bill, ledger, job_label)
    ordered = [rows[k] for k in sorted(rows, key=lambda k: (k[1], k[0]))]
    return Evidence(project_label, job_label, ordered, jobs, unlinked, outside)


def _job_links(
    bill: Sequence[BillRow], ledger: dict[str, list[Any]], job_label: str | None
) -> tuple[list[JobLink], int]:
    """Per job of the run named by a line's ``job_label``: billed and estimated dollars."""
    if job_label is None:
        return [], len(bill)
    team: dict[str, str] = {}
    estimate: dict[str, float] = defaultdict(float)
    for i, job in enumerate(ledger["job_id"]):
        if job:
            team[job] = ledger["project"][i] or UNALLOCATED
            estimate[job] += float(ledger["cost_usd"][i])
    links: dict[str, JobLink] = {}
    unlinked = 0
    for line in bill:
        job = line.labels.get(job_label)
        if not job or job not in team:
            unlinked += 1
            continue
        link = links.setdefault(job, JobLink(job, team[job], estimate_usd=estimate[job]))
        link.bill_usd += line.cost_usd + line.credits_usd
        link.bill_lines += 1
    return [links[j] for j in sorted(links)], unlinked
