"""OpenCost (and Kubecost) allocation exports as bill lines: what each workload cost, by cost component.

Two shapes, both OpenCost's own:

* the ``/allocation`` API response saved as JSON (``curl -G localhost:9003/allocation -d window=7d
  -d aggregate=pod > allocation.json``): ``{"code": 200, "data": [{NAME: ALLOCATION, ...}, ...]}``, one set
  per step; an allocation has ``properties`` (cluster, node, namespace, controllerKind, controller, pod,
  container, labels), ``start``/``end`` (RFC 3339, else its ``window``) and the cost fields ``cpuCost``,
  ``gpuCost``, ``ramCost``, ``pvCost``, ``networkCost``, ``loadBalancerCost``, ``sharedCost``,
  ``externalCost`` (with their ``…CostAdjustment``) and ``totalCost`` (opencost core/pkg/opencost
  allocation_json.go, AllocationJSON);
* the CSV export (``pkg/costmodel/csv_export.go``): one row per allocation and day with ``Date``,
  ``Namespace``, ``ControllerKind``, ``ControllerName``, ``Pod``, ``Container``, ``Labels`` (JSON) and the
  cost columns ``CPUCost``, ``RAMCost``, ``NetworkCost``, ``PVCost``, ``GPUCost``, ``TotalCost``; files
  merged across versions may leave cells (even ``TotalCost``) empty.

Each allocation becomes one bill line per cost component that is not zero (``sku`` ``opencost:gpu``,
``opencost:cpu``, …) over its own [start, end), tagged with its namespace, controller, pod, node and labels
(``label:KEY``), so baselines sum them and reconciliation groups them by namespace or label; whatever
``totalCost`` holds beyond the components (rounding) is a line ``opencost:other``, so the lines add up to
``totalCost`` exactly. A row without ``TotalCost`` totals its components. OpenCost prices in one currency
for the whole install; the file does not say which, so it is taken as USD (``--opencost-currency`` would be
the place to say otherwise). OpenCost says what workloads cost, not when they waited: jobs come from the
kubectl capture beside it.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from fleetlab.model.history import BILL_SCHEMA
from fleetlab.spec.bounded import csv_dict_reader, json_cell, load_json, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import SourceData, open_text, parse_rfc3339, short

#: (component, JSON cost fields added together, CSV column).
COMPONENTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("gpu", ("gpuCost", "gpuCostAdjustment"), "GPUCost"),
    ("cpu", ("cpuCost", "cpuCostAdjustment"), "CPUCost"),
    ("ram", ("ramCost", "ramCostAdjustment"), "RAMCost"),
    ("pv", ("pvCost", "pvCostAdjustment"), "PVCost"),
    ("network", ("networkCost", "networkCostAdjustment"), "NetworkCost"),
    ("loadBalancer", ("loadBalancerCost", "loadBalancerCostAdjustment"), ""),
    ("shared", ("sharedCost",), ""),
    ("external", ("externalCost",), ""),
)
CSV_REQUIRED = ("Date", "Namespace")
MAX_COST = 1e12
#: Residues below this many dollars are rounding (OpenCost rounds every figure to 1e-5 in its API).
ROUNDING = 1e-6


def _number(value: Any, source: str, where: str) -> float:
    if value is None or value == "":
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(source, [f"{where}: {short(value)} is not a number"])
    try:
        number = float(value)
    except ValueError:
        raise SpecError(source, [f"{where}: {short(value)} is not a number"]) from None
    if not math.isfinite(number) or abs(number) > MAX_COST:
        raise SpecError(source, [f"{where}: {short(value)} is outside -1e12..1e12"])
    return number


class _Lines:
    """The BILL_SCHEMA columns being filled."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in BILL_SCHEMA.names}

    def add(
        self, start: float, end: float, resource: str, sku: str, cost: float, tags: dict[str, str]
    ) -> None:
        c = self.columns
        c["charge_start_s"].append(start)
        c["charge_end_s"].append(end)
        c["resource_id"].append(resource or None)
        c["sku"].append(f"opencost:{sku}")
        c["pricing_category"].append(None)
        c["region"].append(None)
        c["billed_cost"].append(cost)
        c["effective_cost"].append(cost)
        c["currency"].append("USD")
        c["tags_json"].append(json.dumps(tags, sort_keys=True, separators=(",", ":")) if tags else None)

    def allocation(
        self, start: float, end: float, resource: str, parts: list[tuple[str, float]], total: float | None,
        tags: dict[str, str],
    ) -> None:  # fmt: skip
        """One allocation: a line per non-zero component, then what ``total`` holds beyond them."""
        for sku, cost in parts:
            if cost:
                self.add(start, end, resource, sku, cost, tags)
        if total is not None:
            rest = total - math.fsum(cost for _, cost in parts)
            if abs(rest) > ROUNDING:
                self.add(start, end, resource, "other", rest, tags)


def _tags(props: dict[str, Any], labels: Any) -> dict[str, str]:
    tags = {k: str(props[k]) for k in ("cluster", "node", "namespace", "controllerKind", "controller", "pod",
                                        "container") if props.get(k)}  # fmt: skip
    if isinstance(labels, dict):
        tags.update({f"label:{k}": str(v) for k, v in labels.items()})
    return tags


def _resource(tags: dict[str, str]) -> str:
    kind = f"{tags['controllerKind']}:" if tags.get("controllerKind") else ""
    parts = [tags.get("namespace", ""), kind + tags.get("controller", ""), tags.get("pod", "")]
    return "/".join(p for p in parts if p)


def _allocation_sets(data: Any, source: str) -> Iterator[dict[str, Any]]:
    """The allocation sets of a response (``{"code", "data": [...]}``), a list of sets, or one set."""
    if isinstance(data, dict) and "data" in data:
        if data.get("code") not in (None, 200):
            raise SpecError(source, [f"'code' is {short(data.get('code'))}: the API answered with an error"])
        data = data["data"]
    sets = data if isinstance(data, list) else [data]
    for index, entry in enumerate(sets):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise SpecError(source, [f"data[{index}]: expected an object of allocations, got {short(entry)}"])
        yield entry


def read_opencost_json(path: Path) -> SourceData:
    """Bill lines from a saved ``/allocation`` response."""
    source = str(path)
    data = SourceData(label=source, kind="opencost")
    lines = _Lines()
    response = load_json(source, read_text_file(path, "OpenCost allocation file not found"))
    for index, allocations in enumerate(_allocation_sets(response, source)):
        for name, alloc in allocations.items():
            where = f"data[{index}].{str(name)[:80]}"
            if not isinstance(alloc, dict):
                raise SpecError(source, [f"{where}: expected an allocation object, got {short(alloc)}"])
            window: dict[str, Any] = alloc["window"] if isinstance(alloc.get("window"), dict) else {}
            start = parse_rfc3339(alloc.get("start") or window.get("start"), source, f"{where}.start")
            end = parse_rfc3339(alloc.get("end") or window.get("end"), source, f"{where}.end")
            if start is None or end is None:
                raise SpecError(source, [f"{where}: needs start and end (or a window) as RFC 3339 times"])
            if end < start:
                data.skip("allocation whose end is before its start")
                continue
            props: dict[str, Any] = alloc["properties"] if isinstance(alloc.get("properties"), dict) else {}
            tags = _tags(props, props.get("labels"))
            parts = [(sku, math.fsum(_number(alloc.get(f), source, f"{where}.{f}") for f in fields))
                     for sku, fields, _ in COMPONENTS]  # fmt: skip
            total = _number(alloc.get("totalCost"), source, f"{where}.totalCost")
            lines.allocation(start, end, _resource(tags) or str(name), parts, total, tags)
            data.saw(end)
    data.bill = pa.Table.from_pydict(lines.columns, schema=BILL_SCHEMA)
    return data


def read_opencost_csv(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """Bill lines from OpenCost's daily CSV export, read row by row."""
    source = str(path)
    data = SourceData(label=source, kind="opencost")
    lines = _Lines()
    with open_text(path, "utf-8-sig") as fh:
        reader = csv_dict_reader(fh)
        try:
            header = [h.strip() for h in reader.fieldnames or []]
            missing = [c for c in CSV_REQUIRED if c not in header]
            costs = [c for *_, c in COMPONENTS if c and c in header]
            if missing or ("TotalCost" not in header and not costs):
                lacking = ", ".join(missing) or "every cost column"
                raise SpecError(
                    source,
                    [f"line 1: an OpenCost CSV export needs Date, Namespace and its cost columns (CPUCost, "
                     f"RAMCost, GPUCost, PVCost, NetworkCost, TotalCost); missing {lacking}"],
                )  # fmt: skip
            for number, row in enumerate(reader, start=2):
                _csv_row(row, number, source, lines, data)
                if progress is not None and number % 65536 == 0:
                    progress(fh.tell())
        except csv.Error as exc:
            raise SpecError(source, [f"line {reader.reader.line_num}: not valid CSV: {exc}"]) from None
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None
    data.bill = pa.Table.from_pydict(lines.columns, schema=BILL_SCHEMA)
    return data


def _csv_row(row: dict[str, Any], number: int, source: str, lines: _Lines, data: SourceData) -> None:
    where = f"line {number}"
    if None in row or any(v is None for v in row.values()):
        raise SpecError(source, [f"{where}: the number of fields differs from the header (truncated?)"])
    try:
        day = datetime.strptime(row["Date"].strip(), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise SpecError(
            source, [f"{where}, column Date: {short(row['Date'])} is not a date (YYYY-MM-DD)"]
        ) from None
    labels: Any = None
    if (row.get("Labels") or "").strip():
        try:
            labels = json_cell(row["Labels"])
        except ValueError as exc:
            raise SpecError(
                source, [f"{where}, column Labels: not a JSON object ({short(str(exc))})"]
            ) from None
    columns = {"namespace": "Namespace", "controllerKind": "ControllerKind", "controller": "ControllerName",
               "pod": "Pod", "container": "Container"}  # fmt: skip
    props = {key: (row.get(column) or "").strip() for key, column in columns.items()}
    tags = _tags(props, labels)
    parts = [(sku, _number(row.get(column), source, f"{where}, column {column}"))
             for sku, _, column in COMPONENTS if column]  # fmt: skip
    text = (row.get("TotalCost") or "").strip()
    total = _number(text, source, f"{where}, column TotalCost") if text else None
    start = day.timestamp()
    end = (day + timedelta(days=1)).timestamp()
    lines.allocation(start, end, _resource(tags), parts, total, tags)
    data.saw(end)


def read_opencost(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """Either shape, told apart by the first character (``{`` or ``[``: the API's JSON)."""
    with open_text(path, "utf-8-sig") as fh:
        first = fh.read(4096).lstrip()[:1]
    return read_opencost_json(path) if first in ("{", "[") else read_opencost_csv(path, progress)
