"""``fleetlab diagnose`` end to end: tables and JSON from kubectl files, exit codes 0/1/2, and bad input
that is refused without echoing file content (Secret data, pod env values)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from fleetlab import cli
from kube_builders import container, node, pod, write_list

FIXTURES = Path(__file__).parent / "fixtures" / "kube"
SNAPSHOT = FIXTURES / "snapshot.json"
ENV_SECRET = "do-not-print-me"  # the fixture pods' WANDB_API_KEY value


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.app, ["diagnose", *args])


def test_table_output_and_exit_1_when_pending() -> None:
    result = invoke("--snapshot", str(SNAPSHOT))
    assert result.exit_code == 1, result.output
    out = result.output
    assert "cordoned: all 2 node(s) with room for the pod now are ruled out" in out
    assert "0/14 nodes are available:" in out
    assert "gpu-h100-c-2" in out and "pulling image" in out and "initialising" in out
    assert ENV_SECRET not in out


def test_json_output_is_the_same_with_separate_files() -> None:
    one = invoke("--snapshot", str(SNAPSHOT), "--json")
    two = invoke("--nodes", str(FIXTURES / "nodes.json"), "--pods", str(FIXTURES / "pods.json"), "--json")
    assert one.exit_code == two.exit_code == 1
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert a == b
    assert {p["pod"]: p["blocked_by"] for p in a["pending"]} == {
        "analytics/notebook-gpu-0": "taint",
        "ml-research/b200-bench-8xkqz": "selector/affinity",
        "ml-research/pretrain-70b-worker-0-fz2lm": "cordoned",
    }
    pretrain = next(p for p in a["pending"] if p["pod"] == "ml-research/pretrain-70b-worker-0-fz2lm")
    assert pretrain["capacity_verdict"] == "fragmentation"
    assert a["now"] == "2026-11-30T09:58:40Z"
    assert ENV_SECRET not in one.stdout


def test_now_option_and_yaml_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(json.loads(SNAPSHOT.read_text())["items"]))
    result = invoke("--snapshot", str(path), "--json", "--now", "2026-11-30T10:20:00Z")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    wait = {p["pod"]: p["waiting_s"] for p in data["pending"]}
    assert wait["ml-research/pretrain-70b-worker-0-fz2lm"] == 60 * 60  # created 09:20:00


def test_exit_0_when_nothing_pending(tmp_path: Path) -> None:
    running = pod("r", [container("c", {"cpu": "1"})], node="n0", phase="Running")
    path = write_list(tmp_path / "ok.json", [node("n0"), running])
    result = invoke("--snapshot", str(path))
    assert result.exit_code == 0, result.output
    assert "nothing pending" in result.output


def test_bad_input_exits_2_without_traceback(tmp_path: Path) -> None:
    truncated = tmp_path / "pods.json"
    truncated.write_text(SNAPSHOT.read_text()[:5000])
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"kind": "Secret", "metadata": {"name": "s"}, "data": {"pw": "czNjcjN0"}}))
    wrong = write_list(tmp_path / "wrong.json", [{"kind": "Service", "metadata": {"name": "x"}}])
    cases = {
        "truncated": (["--snapshot", str(truncated)], "line "),
        "secret": (["--snapshot", str(secret)], "Secret"),
        "wrong kind": (["--snapshot", str(wrong)], "1 Service"),
        "missing": (["--snapshot", str(tmp_path / "nope.json")], "not found"),
        "no files": ([], "--snapshot"),
        "bad now": (["--snapshot", str(SNAPSHOT), "--now", "yesterday"], "RFC 3339"),
    }
    for name, (args, expected) in cases.items():
        result = invoke(*args)
        assert result.exit_code == 2, (name, result.output)
        assert expected in result.output, (name, result.output)
        assert "Traceback" not in result.output and "czNjcjN0" not in result.output, name


def test_kueue_option_shows_queue_verdicts() -> None:
    result = invoke("--snapshot", str(SNAPSHOT), "--kueue", str(FIXTURES / "kueue.json"), "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {w["workload"] for w in data["workloads"]} == {
        "team-a/job-pretrain-2x8",
        "team-a/job-finetune-1x8",
    }
    assert "hf_do_not_print" not in result.stdout
    table = invoke("--snapshot", str(SNAPSHOT), "--kueue", str(FIXTURES / "kueue.json"))
    assert "Kueue workload(s) not admitted" in table.output and "team-a/job-pretrain-2x8" in table.output


def test_events_file_with_other_kinds_is_refused(tmp_path: Path) -> None:
    path = write_list(tmp_path / "events.json", [node("n0")])
    result = invoke("--snapshot", str(SNAPSHOT), "--events", str(path))
    assert result.exit_code == 2 and "--events file" in result.output
