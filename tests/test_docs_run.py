"""Docs that run: every command and snippet in README.md and docs/*.md is run here as written.

What counts: each command line of a ``bash``/``sh``/unlabelled fenced block, each inline command that is
complete (``fleetlab …`` with an option or a path, and no placeholder such as ``[--json]``, ``FILE``, ``…``),
each ``python`` block, and each ``yaml`` block (parsed; a whole scenario or experiment file is validated;
one that starts with ``# NAME.yaml`` is saved under that name for the commands after it). Pages run in one
workspace in order, so README's import → baseline → calibrate → report chain meets its own files; the file
names the docs use for a user's own captures resolve to shipped examples (``PLACEHOLDERS``). A command
that cannot run here is listed in ``NOT_RUN`` with the reason; a new command matching neither fails the
test, so the docs cannot drift. Commands that run for tens of seconds (the full default comparison and
decision report, the ten-seed sweeps of the dynamics and services pages, the five-seed comparisons of the
model page: about two minutes together on two cores) are marked ``slow``: they run with the rest, as the
README's test command runs everything; ``-m 'not slow'`` leaves them out while working on something else.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.experiment.plan import experiment_from_data
from fleetlab.spec.loader import load
from kube_history_builders import small_world
from shared_data import shared_path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
COMMAND_START = re.compile(r"^(\.venv/bin/)?(fleetlab|python3?|pip|kubectl|curl)\b")
INLINE = re.compile(r"`((?:\.venv/bin/)?fleetlab [^`\n]+)`")
PLACEHOLDER = re.compile(r"[\[\]…|<>]|\b[A-Z][A-Z_]*\b")
ALIBABA = shared_path("traces", "alibaba-gpu-v2023", "csv")

#: A user's own files, as the docs name them, and the shipped file each stands for.
PLACEHOLDERS = {
    "pods-jobs.json": "examples/history/pods-jobs.json",
    "workloads.json": "examples/history/workloads.json",
    "events.json": "examples/history/events.json",
    "nodes.json": "examples/history/nodes.json",
    "bill.csv": "examples/plan/aws-focus-bill.csv",
    "sacct.txt": "tests/data/history/sacct.txt",
    "seth.swf": "tests/data/history/tiny.swf",
    "assoc.txt": "tests/data/history/policy/assoc.txt",
    "qos.txt": "tests/data/history/policy/qos.txt",
    "events.txt": "tests/data/history/policy/events.txt",
    "sshare.txt": "tests/data/history/policy/sshare.txt",
    "config.txt": "tests/data/history/policy/config.txt",
    "partitions.txt": "tests/data/history/slurm_partitions/partitions.txt",
    "nodes.txt": "tests/data/history/slurm_partitions/nodes.txt",
    "my.yaml": "examples/two-teams/baseline.yaml",
    "snapshot.json": "tests/fixtures/kube/snapshot.json",
    "s.json": "tests/fixtures/kube/snapshot.json",
    "pods.json": "tests/fixtures/kube/pods.json",
    "kueue.json": "tests/fixtures/kube/kueue.json",
}
#: ``kubectl get priorityclasses -o json`` on a cluster with one class of its own beside the built-in ones.
PRIORITY_CLASSES = (
    '{"apiVersion": "v1", "kind": "List", "items": ['
    '{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "training-high"},'
    ' "value": 1000, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"},'
    '{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",'
    ' "metadata": {"name": "system-cluster-critical"}, "value": 2000000000}]}'
)
#: Commands that cannot run in a test, by how they start, with the reason.
NOT_RUN = {
    "kubectl ": "reads a live cluster; what it writes is shipped in examples/history/ and tests/fixtures/kube/",
    "curl ": "asks a live OpenCost; its answer is examples/history/opencost-allocation.json",
    "python3 -m venv": "installs fleetlab into a new virtual environment: what CI's .ci/run does first",
    "pip ": "installs packages",
    ".venv/bin/python -m pytest": "the test suite itself",
    ".venv/bin/python bench/": "a benchmark (minutes of CPU); bench/ has its own tests",
    "fleetlab calibrate seth/": "calibrates the HPC2N log of shared/traces (not shipped); "
    "tests/test_calibration_real_logs.py runs it where shared/ has it",
    "fleetlab calibrate openb/": "calibrates the Alibaba openb trace (not shipped: research-use terms); "
    "tests/test_calibration_real_logs.py runs it where shared/ has it",
    "fleetlab import openb_pod_list": "reads the Alibaba openb trace (not shipped: research-use terms)",
    "fleetlab import NASA-": "reads a Parallel Workloads Archive log of shared/traces (not shipped)",
    "fleetlab snapshot": "reads a live cluster through the Kubernetes API (pip install 'fleetlab[kube]')",
    "fleetlab import --prometheus": "asks a Prometheus server; tests/test_history_prometheus.py runs a real one",
    "fleetlab cost profile": "times PyTorch training steps (pip install 'fleetlab[profile]'); "
    "tests/test_profile_recorder.py runs it where torch is installed",
    "fleetlab plan profile": "as fleetlab cost profile",
    "fleetlab --show-completion": "prints the completion script of the shell above the process (none in a detached "
    "run); tests/test_cli_conventions.py checks the script with the shell named",
}
#: Exit codes that mean "ran as documented" for commands that report a finding with their status.
FINDING_EXIT = {"diagnose": (0, 1), "lint": (0, 1), "check": (0, 1)}
#: Commands needing the Alibaba openb trace (not shipped: its terms allow research use only).
NEEDS_TRACE = ("--alibaba-pods", "fgd-experiment")
#: Commands that run for tens of seconds: the default scenario (922 jobs) under four policies on five
#: seeds, and decision reports that run such sweeps.
SLOW = (
    re.compile(r"^(\.venv/bin/)?fleetlab compare$"),
    re.compile(r"^(\.venv/bin/)?fleetlab report --out"),
    re.compile(r"^(\.venv/bin/)?fleetlab report examples/experiments/placement.yaml"),
    re.compile(r"^(\.venv/bin/)?fleetlab experiment (run examples/dynamics/|report runs/(service-|packing))"),
    re.compile(r"^(\.venv/bin/)?fleetlab compare default examples/dynamics"),
    re.compile(
        r"^(\.venv/bin/)?fleetlab compare examples/(spot/|dynamics/autoscaled|services/services.yaml examples/services/services-failures.yaml --policy most)"
    ),
    re.compile(r"^(\.venv/bin/)?fleetlab experiment (run|report) (examples/services/|runs/services)"),
    re.compile(r"^\.venv/bin/python examples/dynamics/replica_losses.py"),
)


@dataclass(frozen=True)
class Item:
    """One command or snippet of a page."""

    page: str
    line: int
    kind: str  # command | python | yaml
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _commands(body: str) -> list[tuple[int, str]]:
    """Command lines of a fenced block (continued lines joined, trailing comments dropped)."""
    out: list[tuple[int, str]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        start, text = i, lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        text = re.sub(r"\s+#\s.*$", "", text)
        if COMMAND_START.match(text) and not (
            text.startswith(("fleetlab", ".venv/bin/fleetlab")) and PLACEHOLDER.search(text.split(" > ")[0])
        ):
            out.append((start, text))  # a synopsis line (FILE, [--json]) is a form, not a command
        i += 1
    return out


def extract(page: str) -> list[Item]:
    """Every command and snippet of a page, in page order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    items: list[Item] = []
    for match in FENCE.finditer(text):
        first = text.count("\n", 0, match.start()) + 2
        lang, body = match.group(1), match.group(2)
        if lang in ("bash", "sh", "shell", ""):
            items += [Item(page, first + n, "command", cmd) for n, cmd in _commands(body)]
        elif lang in ("python", "yaml"):
            items.append(Item(page, first, lang, body))
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in INLINE.finditer(prose):
        command = " ".join(match.group(1).split())
        runnable = (" --" in command or "/" in command or ".yaml" in command) and not (
            PLACEHOLDER.search(command) or command.split()[-1].startswith("--")
        )
        if runnable:
            items.append(Item(page, prose.count("\n", 0, match.start()) + 1, "command", command))
    return sorted(items, key=lambda item: item.line)


def _items() -> list[pytest.param]:  # type: ignore[valid-type]
    seen: set[str] = set()
    params = []
    for page in PAGES:
        for item in extract(page):
            if item.kind == "command":
                if item.text in seen:
                    continue
                seen.add(item.text)
            marks = [pytest.mark.slow] if any(p.search(item.text) for p in SLOW) else []
            params.append(pytest.param(item, id=item.id, marks=marks))
    return params


ITEMS = _items()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the docs' relative paths work: examples/ and the user's files of PLACEHOLDERS."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "examples").symlink_to(ROOT / "examples")
    for name, shipped in PLACEHOLDERS.items():
        shutil.copyfile(ROOT / shipped, folder / name)
    (folder / "pc.json").write_text(PRIORITY_CLASSES, encoding="utf-8")
    return folder


def _reason_not_run(command: str) -> str | None:
    plain = command.removeprefix(".venv/bin/")
    for start, reason in NOT_RUN.items():
        if command.startswith(start) or plain.startswith(start):
            return reason
    if "--alibaba-pods" in command:
        return (
            "reads the Alibaba openb trace (not shipped: research-use terms) and replays thousands of pods; "
        )
        "tests/test_alibaba.py reads the trace where shared/ has it"
    if any(flag in command for flag in NEEDS_TRACE) and not ALIBABA.is_dir():
        return "needs the Alibaba openb trace (shared/traces/alibaba-gpu-v2023), not present here"
    return None


def _argv(command: str, folder: Path) -> tuple[list[str], str | None]:
    """fleetlab's arguments (globs expanded) and a file the output is redirected to, if any."""
    redirect = None
    if " > " in command:
        command, redirect = (part.strip() for part in command.split(" > ", 1))
    words = shlex.split(command)
    args: list[str] = []
    for word in words[1:]:
        matches = sorted(glob.glob(word, root_dir=folder)) if any(c in word for c in "*?") else []
        args += matches or [word]
    return args, redirect


def run_command(command: str, folder: Path) -> None:
    if command.startswith((".venv/bin/python ", "python ", "python3 ")):
        script = shlex.split(command)[1:]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        }
        done = subprocess.run([sys.executable, *script], cwd=folder, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        return
    args, redirect = _argv(command, folder)
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    allowed = FINDING_EXIT.get(args[0] if args else "", (0,))
    assert result.exit_code in allowed, f"{command}: exit {result.exit_code}\n{result.output[-3000:]}"
    if redirect is not None:
        (folder / redirect).write_text(result.stdout, encoding="utf-8")


def check_yaml(body: str, folder: Path) -> None:
    data = yaml.safe_load(body)
    first = body.splitlines()[0] if body else ""
    named = re.match(r"#\s*([\w.-]+\.yaml)\b", first)
    whole = isinstance(data, dict) and (
        ("variants" in data and "base" in data)
        or ("name" in data and ("cluster" in data or "workload" in data))
    )
    if not whole:
        return  # a fragment showing one section (parsed above)
    path = folder / (named.group(1) if named else "snippet.yaml")
    path.write_text(body, encoding="utf-8")
    if "variants" in data:
        experiment_from_data(data, path)
    else:
        load(str(path))


@pytest.mark.parametrize("item", ITEMS)
def test_documented_item_runs(item: Item, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)
    if item.kind == "python":
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(item.text, item.id, "exec"), {"__name__": "__docs__"})
        return
    if item.kind == "yaml":
        check_yaml(item.text, workspace)
        return
    reason = _reason_not_run(item.text)
    if reason is not None:
        pytest.skip(reason)
    run_command(item.text, workspace)


def test_every_page_has_its_commands_found() -> None:
    """The extraction itself: README's chain and the Python API's notebook are among the items."""
    texts = {item.text for item in (p.values[0] for p in ITEMS)}
    assert "fleetlab import pods-jobs.json workloads.json events.json nodes.json --out history/" in texts
    assert "fleetlab report calibration/scenario.yaml --out decision --baseline baseline/" in texts
    assert any("fl.run_experiment(calibration" in t for t in texts)
    assert not any(PLACEHOLDER.search(t.split(" > ")[0]) for t in texts if t.startswith("fleetlab"))


def test_shipped_history_is_the_builders_small_world(tmp_path: Path) -> None:
    """examples/history/ is what tests/kube_history_builders.small_world writes (answers worked out in
    tests/test_history_kubectl.py), byte for byte."""
    for written in small_world(tmp_path):
        assert written.read_bytes() == (ROOT / "examples" / "history" / written.name).read_bytes(), (
            written.name
        )
