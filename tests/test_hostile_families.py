"""Hostile input, round two: one named regression test per family of findings (security, data loss,
hangs and memory, tracebacks, nonsense accepted), each case tried as a new user or an attacker would.

Servers (redirects, drips, floods, tokens) are in test_hostile_servers.py; snapshot redaction in
test_snapshot_secrets.py; one fuzz test per importer in test_fuzz_importers.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from fleetlab.spec.csv_out import csv_text, dict_rows_text, neutral_cell, restore_cell
from fleetlab.spec.errors import SpecError
from fleetlab.spec.out_folder import MARKER, folder_lock, mark, staged_output
from test_cli import invoke
from test_experiment import TINY, write_experiment
from test_focus_reconcile import BILL, run_dir  # noqa: F401 (a fixture)
from test_spec_errors import minimal

DATA = Path(__file__).parent / "data" / "history"
SACCT = DATA / "sacct.txt"
FORMULAS = ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd")


def _failure(result: Any, *needles: str) -> str:
    """Exit 2 with one paragraph naming what is wrong, no traceback."""
    assert result.exit_code == 2, (result.output[-1500:], result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    message = " ".join((result.stderr or result.output).split())
    assert "Traceback" not in message
    for needle in needles:
        assert needle in message, message
    return message


def _scenario(tmp: Path, name: str = "s.yaml", **changes: Any) -> Path:
    doc = minimal()
    for dotted, value in changes.items():
        parent: Any = doc
        keys = dotted.split("__")
        for key in keys[:-1]:
            parent = parent[int(key)] if key.isdigit() else parent[key]
        parent[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    path = tmp / name
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _history(tmp: Path) -> Path:
    """An imported history with nodes (the kubectl small world), so calibrate can replay it too."""
    from kube_history_builders import small_world

    out = tmp / "history"
    result = invoke("import", *map(str, small_world(tmp)), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


# --- security: locks and links --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_security_planted_lock_files_are_refused_and_their_targets_untouched(
    tmp_path: Path, kind: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock = tmp_path / ".out.lock"
    (lock.symlink_to if kind == "symlink" else lock.hardlink_to)(victim)
    with (
        pytest.raises(SpecError, match=r"lock file .* (symbolic link|not a plain file)"),
        staged_output(tmp_path / "out"),
    ):
        pass
    assert victim.read_text() == "precious" and not (tmp_path / "out").exists()
    # The same for an experiment folder's lock.
    exp_out = tmp_path / "exp"
    exp_out.mkdir()
    (exp_out / ".fleetlab.lock").symlink_to(victim)
    experiment = write_experiment(tmp_path)
    result = invoke("experiment", "run", str(experiment), "--out", str(exp_out), "--jobs", "1")
    _failure(result, "lock file", "symbolic link")
    assert victim.read_text() == "precious"


def test_security_experiment_never_writes_through_a_linked_runs_folder(tmp_path: Path) -> None:
    experiment = write_experiment(
        tmp_path, "name: one\nbase: tiny.yaml\nseeds: [1]\nvariants: [{name: base}]\n"
    )
    out = tmp_path / "exp"
    assert invoke("experiment", "run", str(experiment), "--out", str(out), "--jobs", "1").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(out / "runs"), elsewhere)
    (out / "runs").symlink_to(elsewhere)
    before = sorted(str(p) for p in elsewhere.rglob("*"))
    result = invoke("experiment", "run", str(experiment), "--out", str(out), "--jobs", "1", "--force")
    _failure(result, "runs is a symbolic link", "never follows a link")
    assert sorted(str(p) for p in elsewhere.rglob("*")) == before


# --- security: formulas in CSV ---------------------------------------------------------------------------


def test_security_csv_formula_cells_are_neutralised() -> None:
    for text in FORMULAS:
        assert neutral_cell(text) == "'" + text and restore_cell("'" + text) == text
    assert neutral_cell(-3) == -3 and neutral_cell(2.5) == 2.5 and neutral_cell("team-a") == "team-a"
    rows = list(csv.reader(io.StringIO(csv_text(["=name", "cost"], [["=cmd|' /C calc'!A0", -1.5]]))))
    assert rows == [["'=name", "cost"], ["'=cmd|' /C calc'!A0", "-1.5"]]
    assert dict_rows_text([{"team": "@x", "n": 1}]) == "team,n\n'@x,1\n"


def test_security_decision_report_csv_has_no_formula(tmp_path: Path) -> None:
    hostile = TINY.replace(
        "        arrivals_per_hour", '        teams: ["=HYPERLINK(1)"]\n        arrivals_per_hour'
    )
    (tmp_path / "tiny.yaml").write_text(hostile.replace("name: exp", "name: '@exp'"), encoding="utf-8")
    result = invoke("report", str(tmp_path / "tiny.yaml"), "--out", str(tmp_path / "out"), "--seeds", "1",
                    "--policy", "default", "--jobs", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("job-classes.csv", "cost-sheet.csv"):
        cells = [c for row in csv.reader((tmp_path / "out" / "report" / name).open()) for c in row]
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))], (name, cells)
        assert any(c.startswith("'=HYPERLINK") for c in cells), (name, cells)


def test_security_native_trace_round_trips_formula_ids(tmp_path: Path) -> None:
    from fleetlab.spec.loader import load
    from fleetlab.spec.native_trace import load_native_trace
    from fleetlab.spec.native_trace_writer import write_native_trace

    jobs = list(
        load(str(_scenario(tmp_path, workload__jobs__0__id="=cmd", workload__jobs__0__team="@t"))).jobs
    )
    path = tmp_path / "trace.csv"
    write_native_trace(jobs, path)
    assert "'=cmd" in path.read_text() and "'@t" in path.read_text()
    table, _ = load_native_trace(path)
    (job,) = list(table)
    assert (job.id, job.team) == ("=cmd", "@t")


# --- data loss ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["baseline", "calibrate"])
@pytest.mark.parametrize("where", ["same", "inside"])
def test_data_loss_out_may_not_be_or_sit_inside_the_history_read(
    tmp_path: Path, command: str, where: str
) -> None:
    history = _history(tmp_path)
    before = {p.name: p.read_bytes() for p in history.iterdir()}
    out = history if where == "same" else history / "results"
    result = invoke(
        command, str(history), "--out", str(out), *(["--no-fit"] if command == "calibrate" else [])
    )
    _failure(result, "an input of this command")
    assert {p.name: p.read_bytes() for p in history.iterdir()} == before


def test_data_loss_simulate_never_replaces_an_imported_history(tmp_path: Path) -> None:
    history = _history(tmp_path)
    before = {p.name: p.read_bytes() for p in history.iterdir()}
    result = invoke("simulate", str(_scenario(tmp_path)), "--out", str(history))
    _failure(result, "holds a history folder written by `fleetlab import`")
    assert {p.name: p.read_bytes() for p in history.iterdir()} == before


@pytest.mark.parametrize("force", [False, True])
def test_data_loss_import_never_deletes_its_source(tmp_path: Path, force: bool) -> None:
    folder = tmp_path / "dump"
    folder.mkdir()
    shutil.copy(SACCT, folder / "sacct.txt")
    if force:  # even a folder fleetlab wrote once, replaced with --force
        mark(folder)
    result = invoke(
        "import", f"slurm:{folder / 'sacct.txt'}", "--out", str(folder), *(["--force"] if force else [])
    )
    if force and result.exit_code == 2 and "no such option" in result.output.lower():
        result = invoke("import", f"slurm:{folder / 'sacct.txt'}", "--out", str(folder))
    assert result.exit_code == 2, result.output
    assert (folder / "sacct.txt").read_bytes() == SACCT.read_bytes()


def test_data_loss_html_and_png_pages_never_replace_or_enter_an_input(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    shutil.copy(Path(__file__).resolve().parent.parent / "examples" / "plan" / "chat-serving.yaml", job)
    before = job.read_bytes()
    result = invoke("plan", "gpus", str(job), "--capacity", "on-demand", "--html", str(job))
    _failure(result, f"--html {job}", "an input of this command")
    assert job.read_bytes() == before
    out = tmp_path / "exp"
    assert invoke("experiment", "run", str(write_experiment(tmp_path)), "--out", str(out)).exit_code == 0
    listing = sorted(p.name for p in out.iterdir())
    _failure(invoke("experiment", "report", str(out), "--png", str(out)), "--png", "an input of this command")
    result = invoke("experiment", "report", str(out), "--html", str(out / "report.html"))
    _failure(result, "--html", "inside", "an input of this command")
    assert sorted(p.name for p in out.iterdir()) == listing


def test_data_loss_marked_out_with_files_of_yours_is_refused(tmp_path: Path) -> None:
    work, scenario = tmp_path / "work", _scenario(tmp_path)
    assert invoke("simulate", str(scenario), "--out", str(work)).exit_code == 0
    assert (work / MARKER).is_file()
    (work / "thesis.tex").write_text("months of work")
    (work / "jobs.parquet").write_bytes(b"edited")  # a file fleetlab wrote, changed since
    message = _failure(invoke("simulate", str(scenario), "--out", str(work)), "thesis.tex", "--force")
    assert "holds what fleetlab did not write" in message and "jobs.parquet" in message
    assert (work / "thesis.tex").read_text() == "months of work"
    assert invoke("simulate", str(scenario), "--out", str(work), "--force").exit_code == 0
    assert not (work / "thesis.tex").exists()


def test_data_loss_out_dot_is_never_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    mark(work)  # even a folder fleetlab once wrote, empty but for its marker
    monkeypatch.chdir(work)
    for out in (".", str(work), str(tmp_path)):
        _failure(
            invoke("simulate", str(_scenario(tmp_path)), "--out", out), "the folder this command runs in"
        )
    assert sorted(p.name for p in work.iterdir()) == [MARKER]


def test_data_loss_a_rerun_still_replaces_its_own_results(tmp_path: Path) -> None:
    scenario, out = _scenario(tmp_path), tmp_path / "out"
    for _ in range(3):
        assert invoke("simulate", str(scenario), "--out", str(out)).exit_code == 0
    with folder_lock(tmp_path / ".out.lock", out):  # a lock held by another run still stops a writer
        _failure(invoke("simulate", str(scenario), "--out", str(out)), "another fleetlab run")


@pytest.mark.parametrize(
    ("out", "needle"),
    [("", "is an empty path"), ("x" * 300, "the folder name is 300 characters; at most 200")],
)
def test_data_loss_out_paths_that_cannot_be_results_folders(tmp_path: Path, out: str, needle: str) -> None:
    target = out if not out else str(tmp_path / out)
    result = invoke("simulate", str(_scenario(tmp_path)), "--out", target)
    assert result.exit_code == 2 and needle in " ".join(result.output.split()), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


# --- tracebacks ---------------------------------------------------------------------------------------

FOCUS_HEADER = "BilledCost,EffectiveCost,ChargePeriodStart,ChargePeriodEnd,BillingCurrency\n"
FOCUS_LINE = "1,1,2024-05-01T00:00:00Z,2024-05-01T01:00:00Z,USD\n"


def test_tracebacks_focus_bill_of_65536_lines_and_a_header_with_blanks(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    big.write_text(FOCUS_HEADER + FOCUS_LINE * 65_540)
    result = invoke("import", f"focus:{big}", "--out", str(tmp_path / "h1"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["bill_lines"] == 65_540
    blanks = tmp_path / "blanks.csv"
    blanks.write_text(" " + FOCUS_HEADER.replace(",", " , ") + FOCUS_LINE)
    result = invoke("import", f"focus:{blanks}", "--out", str(tmp_path / "h2"), "--json")
    assert result.exit_code == 0, result.output


KUBE_SHAPES = [
    ({"kind": "Pod", "metadata": []}, "`metadata` is a list"),
    ({"kind": "Pod", "metadata": {"name": "p"}, "spec": "x"}, "`spec` is a str"),
    ({"kind": "Pod", "metadata": {"name": "p"}, "status": 5}, "`status` is a int"),
    ({"kind": "Pod", "metadata": {"name": "p", "labels": ["a"]}}, "`metadata.labels` must map strings"),
    ({"kind": "Pod", "metadata": {"name": 5}}, "`metadata.name` must be a string"),
    ({"kind": "Job", "metadata": {"name": "j", "annotations": {"a": 1}}}, "`metadata.annotations`"),
]


@pytest.mark.parametrize(("obj", "needle"), KUBE_SHAPES)
def test_tracebacks_kubectl_fields_of_the_wrong_json_type(
    tmp_path: Path, obj: dict[str, Any], needle: str
) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"kind": "List", "items": [obj]}))
    _failure(invoke("import", f"kubectl:{path}", "--out", str(tmp_path / "h")), needle)


def _set(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    parent: Any = doc
    keys = dotted.split(".")
    for key in keys[:-1]:
        parent = parent[int(key)] if key.isdigit() else parent[key]
    parent[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    return doc


#: A field deep in a real object given a value of another JSON type: (object, field, value, what is named).
DEEP_KUBE_SHAPES = [
    ("pod", "metadata.ownerReferences", 5, "`metadata.ownerReferences` is a int; it must be a list"),
    ("pod", "status.conditions", "x", "`status.conditions` is a str; it must be a list"),
    ("pod", "status.containerStatuses", {}, "`status.containerStatuses` is a dict; it must be a list"),
    ("pod", "status.containerStatuses.0.state", 5, "`status.containerStatuses[0].state` is a int"),
    ("pod", "spec.containers.0.resources.requests.cpu", 1e308, "outside 0..9,007,199,254,740,992"),
    ("job", "spec.template", 5, "`spec.template` is a int; it must be a mapping"),
    ("job", "spec.template.spec", [], "`spec.template.spec` is a list; it must be a mapping"),
    ("job", "status.conditions", 5, "`status.conditions` is a int"),
]


@pytest.mark.parametrize(("kind", "field", "value", "needle"), DEEP_KUBE_SHAPES)
def test_tracebacks_kubectl_deep_fields_of_the_wrong_json_type(
    tmp_path: Path, kind: str, field: str, value: Any, needle: str
) -> None:
    from kube_history_builders import job, pod

    obj = (
        pod("ns", "p-0", "10:00:00", scheduled="10:00:01", started="10:00:02", finished="10:30:00",
            phase="Succeeded", gpus=1)
        if kind == "pod" else job("ns", "j", "10:00:00", parallelism=1, succeeded=1)
    )  # fmt: skip
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"kind": "List", "items": [_set(obj, field, value)]}))
    _failure(invoke("import", f"kubectl:{path}", "--out", str(tmp_path / "h")), needle)


@pytest.mark.parametrize("field", ["spec.priority", "spec.completions", "spec.parallelism"])
def test_nonsense_true_is_no_count_in_a_kubectl_object(tmp_path: Path, field: str) -> None:
    from kube_history_builders import job, owner, pod

    items = [
        pod("ns", "j-0", "10:00:00", owner_ref=owner("Job", "j"), scheduled="10:00:01", started="10:00:02",
            finished="10:30:00", phase="Succeeded", gpus=1),
        _set(job("ns", "j", "10:00:00", parallelism=1, succeeded=1), field, True),
    ]  # fmt: skip
    if field == "spec.priority":
        items[0]["spec"]["priority"] = True
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    result = invoke("import", f"kubectl:{path}", "--out", str(tmp_path / "h"), "--json")
    assert result.exit_code == 0, result.output  # true is read as "not given", not as 1


SACCT_JSON_SHAPES = [
    ({"jobs": {"a": 1}}, "'jobs' is a dict"),
    ({"jobs": [{"job_id": 1, "time": 5}]}, "jobs[0].time: expected an object"),
    ({"jobs": [{"job_id": 1, "tres": []}]}, "jobs[0].tres: expected an object"),
    ({"jobs": [{"job_id": 1, "state": 3}]}, "jobs[0].state"),
    ({"jobs": [{"job_id": "x"}]}, "jobs[0].job_id"),
    ({"jobs": [{"job_id": 1, "tres": {"allocated": {}}}]}, "jobs[0].tres.allocated"),
    ({"jobs": [{"job_id": 1, "partition": ["gpu"]}]}, "jobs[0].partition: expected a string"),
    ({"jobs": [{"job_id": 1, "restart_cnt": 1e30}]}, "jobs[0].restart_cnt"),
]


@pytest.mark.parametrize(("doc", "needle"), SACCT_JSON_SHAPES)
def test_tracebacks_slurm_json_rows(tmp_path: Path, doc: dict[str, Any], needle: str) -> None:
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps(doc))
    _failure(invoke("import", f"slurm:{path}", "--out", str(tmp_path / "h")), needle)


def test_tracebacks_philly_log_with_gpus_of_the_wrong_type(tmp_path: Path) -> None:
    log = [{"status": "Pass", "jobid": "a", "vc": "v", "submitted_time": "2017-10-03 08:00:00",
            "attempts": [{"start_time": "2017-10-03 08:01:00", "end_time": "2017-10-03 09:00:00",
                          "detail": [{"ip": "m1", "gpus": 8}]}]}]  # fmt: skip
    path = tmp_path / "philly.json"
    path.write_text(json.dumps(log))
    _failure(invoke("import", f"philly:{path}", "--out", str(tmp_path / "h")), "gpus: expected a list")


@pytest.mark.parametrize("rate", ["0", "1e-308", "inf", "nan", "1e9"])
def test_nonsense_bill_in_another_currency_at_an_absurd_rate(
    run_dir: Path,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    rate: str,
) -> None:
    eur = tmp_path / "eur.csv"
    eur.write_text(BILL.read_text(encoding="utf-8").replace(",USD,", ",EUR,"), encoding="utf-8")
    args = ["--rate-source", "ECB", "--rate-date", "2026-11-02"]
    result = invoke(
        "plan",
        "reconcile",
        "--bill",
        str(eur),
        "--run",
        str(run_dir),
        "--exchange-rate",
        f"EUR={rate}",
        *args,
    )
    finite = rate not in ("inf", "nan")  # not a number at all: the CUR=UNITS_PER_USD paragraph
    _failure(result, "--exchange-rate", "allowed 0.0001 <= units per USD <= 1e+07" if finite else "give CUR=")


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"workload__jobs__0__requests__nvidia.com/gpu": 2**64}, "is larger than 9,007,199,254,740,992"),
        ({"cluster__pools__0__cpu": "9Ei"}, "the largest fleetlab models"),
        ({"seed": 2**64}, "seed"),
    ],
)
def test_tracebacks_overflowing_numbers_in_a_scenario(
    tmp_path: Path, changes: dict[str, Any], needle: str
) -> None:
    doc = minimal()
    for dotted, value in changes.items():
        keys = dotted.split("__")
        parent: Any = doc
        for key in keys[:-1]:
            parent = parent[int(key)] if key.isdigit() else parent[key]
        parent[keys[-1]] = value
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    _failure(invoke("validate", str(tmp_path / "s.yaml")), needle)


def test_tracebacks_a_pool_of_no_nodes_is_a_warning(tmp_path: Path) -> None:
    result = invoke("simulate", str(_scenario(tmp_path, cluster__pools__0__count=0)), "--json")
    assert result.exit_code == 0, result.output
    assert "no node could ever run a pod" in result.stderr


def test_tracebacks_damaged_experiment_folders(tmp_path: Path) -> None:
    experiment = write_experiment(
        tmp_path, "name: one\nbase: tiny.yaml\nseeds: [1]\nvariants: [{name: base}]\n"
    )
    out = tmp_path / "exp"
    assert invoke("experiment", "run", str(experiment), "--out", str(out), "--jobs", "1").exit_code == 0
    manifest = out / "manifest.json"
    good = manifest.read_text()
    for text in ("[]", "[" * 100_000 + "]" * 100_000, good.replace("0.95", "NaN")):
        manifest.write_text(text)
        _failure(invoke("experiment", "report", str(out)), str(manifest))
    manifest.write_text(good)
    run_json = next(out.glob("runs/*/seed-*/run.json"))
    run_json.write_text("[]")  # damaged: the run is done again on resume
    result = invoke("experiment", "run", str(experiment), "--out", str(out), "--jobs", "1")
    assert result.exit_code == 0 and "1 run(s) executed" in result.stderr, result.output


@pytest.mark.parametrize(
    "seeds", ["[18446744073709551616]", "[-1]", "[true]", "{start: 9223372036854775807, count: 2}"]
)
def test_tracebacks_experiment_seeds_out_of_range(tmp_path: Path, seeds: str) -> None:
    experiment = write_experiment(
        tmp_path, f"name: one\nbase: tiny.yaml\nseeds: {seeds}\nvariants: [{{name: base}}]\n"
    )
    _failure(
        invoke("experiment", "run", str(experiment), "--out", str(tmp_path / "exp"), "--jobs", "1"), "seeds"
    )


# --- nonsense accepted --------------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["9999-12-31", "1e308", "-5", "nan"])
def test_nonsense_import_end_far_outside_a_record(tmp_path: Path, end: str) -> None:
    _failure(invoke("import", f"slurm:{SACCT}", "--end", end, "--out", str(tmp_path / "h")), "--end")


def test_nonsense_duplicated_job_rows_are_refused(tmp_path: Path) -> None:
    history = _history(tmp_path)
    jobs = pq.read_table(history / "jobs.parquet")
    import pyarrow as pa

    pq.write_table(pa.concat_tables([jobs, jobs.slice(0, 1)]), history / "jobs.parquet")
    _failure(invoke("baseline", str(history)), "appears more than once")


@pytest.mark.parametrize(
    ("value", "needle"), [("NaN", "NaN is not valid JSON"), ("1e999", "1e999 is past the range of a number")]
)
def test_nonsense_baseline_json_with_nan_is_refused(tmp_path: Path, value: str, needle: str) -> None:
    from fleetlab.report.decision import read_baseline

    (tmp_path / "baseline.json").write_text(f'{{"summary": {{"cost_total": {value}}}}}')
    with pytest.raises(SpecError, match=needle):
        read_baseline(tmp_path)


def test_nonsense_a_calibration_file_past_float_range_is_unreadable(tmp_path: Path) -> None:
    from fleetlab.experiment.calibration_context import read_calibration

    (tmp_path / "calibration.json").write_text(
        '{"verdict": "pass", "fitted": [{"knob": "x", "value": 1e999}]}'
    )
    context = read_calibration(tmp_path / "s.yaml")
    assert context is not None and context.verdict.startswith("unreadable (invalid JSON: 1e999")
    (tmp_path / "calibration.json").write_text("[" * 100_000 + "]" * 100_000)
    context = read_calibration(tmp_path / "s.yaml")
    assert context is not None and context.verdict == "unreadable (nested deeper than 64 levels)"


BILL_HEADER = (
    "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,"
    "currency_conversion_rate,cost_type\n"
)


@pytest.mark.parametrize(
    ("cells", "needle"),
    [
        ("-1e308,USD,1,regular", "outside the allowed -1e+12..1e+12"),
        ("-1,USD,1,regular", "usage never costs less than 0"),
        ("9,EUR,0,regular", "currency_conversion_rate of 0.0001..1e+07"),
        ("9,EUR,1e-308,regular", "currency_conversion_rate of 0.0001..1e+07"),
    ],
)
def test_nonsense_bills(tmp_path: Path, cells: str, needle: str) -> None:
    bill = tmp_path / "bill.csv"
    bill.write_text(
        BILL_HEADER + f"Compute Engine,GPU,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,,{cells}\n"
    )
    _failure(invoke("import", f"gcp-billing:{bill}", "--out", str(tmp_path / "h")), needle)
    focus = tmp_path / "focus.csv"
    focus.write_text(
        FOCUS_HEADER.rstrip("\n")
        + ",ChargeCategory\n"
        + FOCUS_LINE.replace("1,1", "-1,-1").rstrip("\n")
        + ",Usage\n"
    )
    _failure(
        invoke("import", f"focus:{focus}", "--out", str(tmp_path / "h")), "only Adjustment and Credit lines"
    )


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"cluster__pools__0__count": True}, "true is not a number"),
        ({"workload__jobs__0__runtime": 0}, "runtime.default: Input should be greater than 0"),
        ({"workload__jobs__0__pods": False}, "false is not a number"),
    ],
)
def test_nonsense_scenario_values(tmp_path: Path, changes: dict[str, Any], needle: str) -> None:
    _failure(invoke("validate", str(_scenario(tmp_path, **changes))), needle)


def test_nonsense_scan_interval_and_two_global_defaults(tmp_path: Path) -> None:
    doc = minimal()
    doc["cluster"]["autoscaler"] = {"scan_interval": 0}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(doc))
    _failure(invoke("validate", str(tmp_path / "a.yaml")), "scan_interval")
    doc = minimal()
    doc["priority_classes"] = [
        {"metadata": {"name": n}, "value": v, "globalDefault": True} for n, v in (("low", 1), ("high", 9))
    ]
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(doc))
    _failure(invoke("validate", str(tmp_path / "b.yaml")), "high, low are all globalDefault")


def test_nonsense_snapshot_with_two_global_defaults_uses_the_smaller() -> None:
    from fleetlab.spec.kube_objects import global_default

    classes = [{"metadata": {"name": n}, "value": v, "globalDefault": True} for n, v in (("b", 9), ("a", 1))]
    assert global_default(classes) is classes[1]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["compare", "default", "--seeds", "42,,43"], "--seeds '42,,43'"),
        (["simulate", "--from-snapshot", "SNAP", "--snapshot-runtime", "0"], "--snapshot-runtime"),
        (["cost", "checkpoint", "--write-time", "5m", "--rate-per-hour", "1e-308"], "--rate-per-hour 1e-308"),
    ],
)
def test_nonsense_options(tmp_path: Path, args: list[str], needle: str) -> None:
    from test_snapshot_secrets import NODE

    snapshot = tmp_path / "snap.json"
    snapshot.write_text(json.dumps({"kind": "List", "items": [NODE]}))
    _failure(invoke(*[str(snapshot) if a == "SNAP" else a for a in args]), needle)


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        (
            "a3-highgpu-8g,208,1872,H100,8,,us-central1,us-central1-a,1e300,26",
            "column Price: '1e300' is outside",
        ),
        ("a3-highgpu-8g,208,1e308,H100,8,,us-central1,us-central1-a,88,26", "column MemoryGiB"),
    ],
)
def test_nonsense_catalog_prices_and_sizes(row: str, needle: str) -> None:
    from fleetlab.spec.catalog import parse_catalog

    header = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
    with pytest.raises(SpecError, match=needle):
        parse_catalog("cat.csv", header + row + "\n")


def test_nonsense_catalog_gpu_machine_priced_zero_is_not_an_offer() -> None:
    from fleetlab.spec.catalog import parse_catalog

    header = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
    catalog = parse_catalog(
        "cat.csv", header + "a3-highgpu-8g,208,1872,H100,8,,us-central1,us-central1-a,0,26\n"
    )
    (offer,) = catalog.offers
    assert (offer.price, offer.spot_price) == (None, 26.0)
    assert any("a price of 0 for a GPU machine is not a price" in w for w in catalog.all_warnings())


def test_nonsense_an_import_with_nothing_in_it(tmp_path: Path) -> None:
    empty = tmp_path / "sacct.txt"
    empty.write_text(SACCT.read_text().splitlines()[0] + "\n")
    _failure(
        invoke("import", f"slurm:{empty}", "--out", str(tmp_path / "h")), "holds no job, node or bill line"
    )
    assert not (tmp_path / "h").exists()


def test_fixture_files_exist() -> None:
    assert SACCT.is_file() and os.access(SACCT, os.R_OK)
