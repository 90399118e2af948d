"""Structure-aware fuzzing of every reader and the main CLI options: each case ends in a clean exit (0, 1
for findings, 2 for bad input) with no traceback, within a time bound.

Valid documents (a scenario, an experiment file, a kubectl snapshot with Kueue objects, a manifest, a price
catalog, a billing export, rate and interruption traces) are mutated where hypothesis chooses: a value
replaced by a hostile one (huge or negative numbers, inf/NaN, wrong types, deep nesting, long strings,
quantities like 9Ei), a key deleted, or the text cut. Derandomised, so CI runs the same corpus every time;
``FLEETLAB_FUZZ_EXAMPLES`` raises the number of examples for a longer local hunt.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fleetlab.experiment.plan import load_experiment
from fleetlab.kube.queues import KueueView
from fleetlab.lint.manifests import read_manifests
from fleetlab.spec.alibaba import load_openb_pods
from fleetlab.spec.billing_export import parse_billing_export
from fleetlab.spec.catalog import parse_catalog
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.store import load_history
from fleetlab.spec.interruption_trace import parse_interruption_trace
from fleetlab.spec.kube_snapshot import load_snapshot
from fleetlab.spec.loader import load
from fleetlab.spec.native_trace import load_native_trace
from fleetlab.spec.service_trace import parse_rate_trace
from kube_history_builders import kube_list, pod
from test_alibaba import POD_HEADER, PODS
from test_cli import invoke
from test_experiment import EXPERIMENT, TINY
from test_snapshot_secrets import NODE, POD, WORKLOAD
from test_spec_errors import minimal

EXAMPLES = int(os.environ.get("FLEETLAB_FUZZ_EXAMPLES", "40"))
#: No single case may take longer than this (a hang or blow-up shows as a slow case first).
CASE_SECONDS = 10.0
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

HOSTILE_NUMBERS = st.sampled_from(
    [
        0,
        -1,
        2**31,
        2**63,
        2**64,
        -(2**64),
        10**12,
        1e20,
        1e308,
        -1e308,
        float("inf"),
        float("nan"),
        0.5,
        1e-300,
    ]
)
HOSTILE_STRINGS = st.sampled_from(
    [
        "",
        "9Ei",
        "-5",
        "1e308",
        "inf",
        "nan",
        "..",
        "../../x",
        "\x00",
        "a" * 5000,
        "1h" * 200,
        "9" * 400,
        "0.0001m",
    ]
)
HOSTILE_VALUES: st.SearchStrategy[Any] = st.one_of(
    HOSTILE_NUMBERS,
    HOSTILE_STRINGS,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.just([]),
    st.just({}),
    st.just([None]),
    st.just({"a": {"b": {"c": [1, 2, {"d": None}]}}}),
)

CATALOG = (
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
    "a3-highgpu-8g,208,1872,H100,8,,us-central1,us-central1-a,88.49,26.0\n"
    "a2-highgpu-1g,12.0,85.0,,,,europe-west4,europe-west4-a,0.81406,0.31824\n"
)
BILL = (
    "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,"
    "currency_conversion_rate,cost_type\n"
    "Compute Engine,Nvidia L4 GPU running in Americas,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,"
    "team=a;env=prod,9.2,EUR,0.92,regular\n"
    'Compute Engine,N2 Instance Core,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,"{""a"": ""b""}",2,USD,1,regular\n'
)
RATES = "time,rps\n0,10\n1h,20\n2h,5\n"
INTERRUPTIONS = "time,pool,node\n1h,spot,spot-0\n2h,spot,\n"
MANIFEST = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      containers:
        - name: main
          image: trainer:1
          resources:
            limits: {nvidia.com/gpu: 8}
"""
CQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
    "spec": {
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
            }
        ]
    },
}
LQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "team-a", "namespace": "ml"},
    "spec": {"clusterQueue": "cq"},
}
SNAPSHOT = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        NODE,
        {**POD, "spec": {**POD["spec"], "schedulerName": "default-scheduler"}},
        {**WORKLOAD, "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload"},
        CQ,
        LQ,
    ],
}


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a nested document (mapping keys and list indices), the root excluded."""
    out: list[tuple[Any, ...]] = []
    items: list[tuple[Any, Any]] = []
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = list(enumerate(doc))
    for key, value in items:
        out.append((*prefix, key))
        out.extend(paths(value, (*prefix, key)))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one to three places replaced by a hostile value or removed."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = paths(doc)
        if not places:
            break
        where = draw(st.sampled_from(places))
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
            del parent[where[-1]]
        else:
            parent[where[-1]] = copy.deepcopy(draw(HOSTILE_VALUES))  # drawn values are shared objects
    return doc


@st.composite
def mutated_text(draw: st.DrawFn, base: str, sep: str = ",") -> str:
    """``base`` with cells (split on ``sep``) or lines replaced by hostile text, or cut short."""
    lines = base.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        row = draw(st.integers(0, len(lines) - 1))
        cells = lines[row].split(sep)
        cell = draw(st.integers(0, len(cells) - 1))
        cells[cell] = draw(st.one_of(HOSTILE_STRINGS, st.text(max_size=8), HOSTILE_NUMBERS.map(str)))
        lines[row] = sep.join(cells)
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


def dump_yaml(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def bounded(call: Callable[[], Any]) -> None:
    """Run one case: a result or a SpecError are both fine; anything else, or a slow case, fails."""
    started = time.perf_counter()
    try:
        call()
    except SpecError as exc:
        assert "\n" not in str(exc), str(exc)
    elapsed = time.perf_counter() - started
    assert elapsed < CASE_SECONDS, f"case took {elapsed:.1f} s"


def cli_clean(*args: str) -> Any:
    """A CLI case: exit 0, 1 or 2, never an unhandled exception, within the time bound."""
    started = time.perf_counter()
    result = invoke(*args)
    elapsed = time.perf_counter() - started
    assert result.exit_code in (0, 1, 2), (args, result.output[-2000:])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in result.output
    assert elapsed < CASE_SECONDS, f"{args} took {elapsed:.1f} s"
    return result


# --- scenarios -------------------------------------------------------------------------------------


@FUZZ
@given(doc=mutated(minimal()))
@example(doc={**minimal(), "seed": 2**64})
@example(doc={**minimal(), "horizon_s": 1e308})
def test_fuzz_scenario_validate(tmp_path_factory: Any, doc: Any) -> None:
    path = tmp_path_factory.mktemp("scenario") / "s.yaml"
    path.write_text(dump_yaml(doc), encoding="utf-8")
    bounded(lambda: load(str(path)))


@settings(FUZZ, max_examples=max(5, EXAMPLES // 4))
@given(doc=mutated(minimal()))
def test_fuzz_scenario_simulate_json_is_strict(tmp_path_factory: Any, doc: Any) -> None:
    path = tmp_path_factory.mktemp("scenario") / "s.yaml"
    path.write_text(dump_yaml(doc), encoding="utf-8")
    result = invoke("simulate", str(path), "--json")
    assert result.exit_code in (0, 2), result.output[-2000:]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code == 0:
        json.loads(result.stdout, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))


@FUZZ
@given(text=st.text(max_size=300))
@example(text="a: &a [1, *a]")
@example(text="- " * 200 + "x")
@example(text="{" * 5000)
def test_fuzz_scenario_arbitrary_text(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("scenario") / "s.yaml"
    path.write_text(text, encoding="utf-8")
    bounded(lambda: load(str(path)))


# --- experiment files ------------------------------------------------------------------------------


@FUZZ
@given(doc=mutated(yaml.safe_load(EXPERIMENT)))
def test_fuzz_experiment_file(tmp_path_factory: Any, doc: Any) -> None:
    folder = tmp_path_factory.mktemp("experiment")
    (folder / "tiny.yaml").write_text(TINY, encoding="utf-8")
    (folder / "exp.yaml").write_text(dump_yaml(doc), encoding="utf-8")
    bounded(lambda: load_experiment(folder / "exp.yaml"))


# --- kubectl dumps and Kueue objects -----------------------------------------------------------------


@FUZZ
@given(doc=mutated(SNAPSHOT))
def test_fuzz_snapshot_and_kueue_objects(tmp_path_factory: Any, doc: Any) -> None:
    path = tmp_path_factory.mktemp("snapshot") / "snap.json"
    path.write_text(json.dumps(doc), encoding="utf-8")

    def read() -> None:
        snap = load_snapshot([path])
        KueueView(snap.queue_objects)

    bounded(read)
    cli_clean("diagnose", "--snapshot", str(path), "--json")


@FUZZ
@given(doc=mutated(SNAPSHOT), extra=st.one_of(HOSTILE_STRINGS, st.text(max_size=10)))
def test_fuzz_simulate_from_snapshot_options(tmp_path_factory: Any, doc: Any, extra: str) -> None:
    path = tmp_path_factory.mktemp("snapshot") / "snap.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    pool = "gpu" if extra.isdigit() else extra
    cli_clean("simulate", "--from-snapshot", str(path), "--add-nodes", f"{pool}={extra}", "--json")


@FUZZ
@given(doc=mutated(yaml.safe_load(MANIFEST)))
def test_fuzz_lint_manifest(tmp_path_factory: Any, doc: Any) -> None:
    path = tmp_path_factory.mktemp("lint") / "job.yaml"
    path.write_text(dump_yaml(doc), encoding="utf-8")
    bounded(lambda: read_manifests(path))
    cli_clean("lint", str(path))


# --- tables ----------------------------------------------------------------------------------------


@FUZZ
@given(text=mutated_text(CATALOG))
def test_fuzz_price_catalog(text: str) -> None:
    bounded(lambda: parse_catalog("catalog.csv", text))


@FUZZ
@given(text=mutated_text(BILL))
def test_fuzz_billing_export(text: str) -> None:
    bounded(lambda: parse_billing_export("bill.csv", text))


@FUZZ
@given(rates=mutated_text(RATES), interruptions=mutated_text(INTERRUPTIONS))
def test_fuzz_rate_and_interruption_traces(rates: str, interruptions: str) -> None:
    bounded(lambda: parse_rate_trace("rates.csv", rates))
    bounded(lambda: parse_interruption_trace("spot.csv", interruptions, {"spot": 2}))


# --- options ---------------------------------------------------------------------------------------

OPTION_VALUES = st.one_of(HOSTILE_STRINGS, HOSTILE_NUMBERS.map(str), st.text(min_size=1, max_size=8))


@FUZZ
@given(write=OPTION_VALUES, mtbi=OPTION_VALUES, price=OPTION_VALUES)
@example(write="5m", mtbi="1ms", price="1")
def test_fuzz_checkpoint_options(write: str, mtbi: str, price: str) -> None:
    cli_clean("cost", "checkpoint", "--write-time", write, "--mtbi", mtbi, "--price-per-hour", price)


@FUZZ
@given(throughput=OPTION_VALUES, steps=OPTION_VALUES, samples=OPTION_VALUES)
@example(throughput="inf", steps="10", samples="1")
def test_fuzz_plan_gpus_options(throughput: str, steps: str, samples: str) -> None:
    cli_clean(
        "plan",
        "gpus",
        "--reference-gpu",
        "H100",
        "--throughput",
        throughput,
        "--steps",
        steps,
        "--samples-per-step",
        samples,
        "--json",
        "--cloud",
        "gcp",
    )


@settings(FUZZ, max_examples=max(5, EXAMPLES // 4))
@given(seed=OPTION_VALUES)
def test_fuzz_simulate_seed_option(tmp_path_factory: Any, seed: str) -> None:
    path = tmp_path_factory.mktemp("scenario") / "s.yaml"
    path.write_text(dump_yaml(minimal()), encoding="utf-8")
    cli_clean("simulate", str(path), "--seed", seed, "--json")


# --- history importers and job traces -----------------------------------------------------------------

HISTORY = Path(__file__).parent / "data" / "history"
#: Small valid inputs of each text format ``fleetlab import`` reads, with the separator of their cells.
HISTORY_TEXTS = {
    "slurm": ("\n".join((HISTORY / "sacct.txt").read_text(encoding="utf-8").splitlines()[:4]), "|"),
    "focus": ("\n".join((HISTORY / "focus.csv").read_text(encoding="utf-8").splitlines()[:3]), ","),
    "swf": ((HISTORY / "tiny.swf").read_text(encoding="utf-8"), " "),
    "philly": ("timestamp,duration,num_gpus,cluster\n2017-10-03 08:00:00,600,2,c1\n", ","),
}
#: ... and of the JSON ones (a kubectl pod list, the Philly cluster_job_log).
HISTORY_DOCS = {
    "kubectl": kube_list([pod("ns", "p", "10:00:00", scheduled="10:00:01", started="10:00:02",
                              finished="10:30:00", phase="Succeeded", gpus=1)]),
    "philly": json.loads((HISTORY / "philly_log.json").read_text(encoding="utf-8"))[:2],
}  # fmt: skip
NATIVE = "id,submit_s,runtime_s,class,priority,team,pods,cpu,memory,gpus\nj1,0,3600,training,5,a,2,8,64Gi,8\n"
OPENB = POD_HEADER + "\n" + "\n".join(PODS[:3]) + "\n"


@st.composite
def history_input(draw: st.DrawFn) -> tuple[str, str]:
    """A format and a mutated input of that format (text cells replaced, or a JSON document mutated)."""
    if draw(st.booleans()):
        fmt = draw(st.sampled_from(sorted(HISTORY_TEXTS)))
        base, sep = HISTORY_TEXTS[fmt]
        return fmt, draw(mutated_text(base, sep))
    fmt = draw(st.sampled_from(sorted(HISTORY_DOCS)))
    text = json.dumps(draw(mutated(HISTORY_DOCS[fmt])))
    return fmt, text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 5)) == 0 else text


@settings(FUZZ, max_examples=max(8, EXAMPLES // 3))
@given(case=history_input())
@example(case=("kubectl", '{"kind": "List", "items": [' + "[" * 100 + "]" * 100 + "]}"))
@example(case=("focus", HISTORY_TEXTS["focus"][0].replace("USD", "x" * 200_000)))
def test_fuzz_import_history(tmp_path_factory: Any, case: tuple[str, str]) -> None:
    fmt, text = case
    folder = tmp_path_factory.mktemp("import")
    source = folder / "input"
    source.write_text(text, encoding="utf-8")
    result = cli_clean("import", f"{fmt}:{source}", "--out", str(folder / "out"))
    assert result.exit_code in (0, 2), result.output[-2000:]
    if result.exit_code == 0:  # a result must be a history folder that loads and passes its checks
        load_history(folder / "out")


@FUZZ
@given(native=mutated_text(NATIVE), openb=mutated_text(OPENB))
def test_fuzz_native_and_alibaba_traces(tmp_path_factory: Any, native: str, openb: str) -> None:
    folder = tmp_path_factory.mktemp("traces")
    (folder / "jobs.csv").write_text(native, encoding="utf-8")
    (folder / "pods.csv").write_text(openb, encoding="utf-8")
    bounded(lambda: load_native_trace(folder / "jobs.csv"))
    bounded(lambda: load_openb_pods(folder / "pods.csv"))


def test_corpus_runs_derandomised() -> None:
    # The corpus must be the same on every CI run (a failure is then reproducible from the log alone).
    assert FUZZ.derandomize and FUZZ.database is None
