"""``fleetlab import`` end to end: the folder it writes, ``load_history`` reading it back, ``--json``,
byte-identical reruns and bad input (exit 2, one paragraph, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import load_history, write_history
from kube_history_builders import small_world

DATA = Path(__file__).parent / "data" / "history"
runner = CliRunner()


def test_import_writes_a_folder_load_history_reads_back(tmp_path: Path) -> None:
    files = small_world(tmp_path)
    out = tmp_path / "hist"
    result = runner.invoke(
        app, ["import", *map(str, files), f"focus:{DATA / 'focus.csv'}", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".fleetlab-output",  # the output writer's marker (spec.out_folder)
        "bill.parquet",
        "history.json",
        "jobs.parquet",
        "node_down.parquet",
        "nodes.parquet",
        "policy.json",
    ]
    assert "completed" in result.output and "left out, by reason" in result.output
    meta = json.loads((out / "history.json").read_text())
    # Epoch: the earliest submit (train-1, 10:00:00); the bill's credit line starts 10 h earlier (-36000 s).
    assert meta["epoch"] == "2024-05-01T10:00:00Z" and meta["jobs"] == 5 and meta["bill_lines"] == 3
    assert meta["jobs_by_state"] == {"completed": 1, "failed": 2, "running": 1, "pending": 1, "cancelled": 0}
    loaded = load_history(out)
    direct = import_sources([*files, f"focus:{DATA / 'focus.csv'}"])
    assert (
        loaded.jobs.equals(direct.jobs)
        and loaded.nodes.equals(direct.nodes)
        and loaded.bill.equals(direct.bill)
    )
    assert loaded.skipped == direct.skipped and loaded.end_s == direct.end_s and loaded.epoch == direct.epoch
    assert loaded.bill.column("charge_start_s").to_pylist()[-1] == -36000.0


def test_json_summary_and_byte_identical_reruns(tmp_path: Path) -> None:
    files = [str(DATA / "sacct.txt"), str(DATA / "tiny.swf")]
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        result = runner.invoke(app, ["import", *files, "--out", str(out), "--json"])
        assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["jobs"] == 9 and summary["jobs_by_state"]["pending"] == 1
    for name in ("jobs.parquet", "nodes.parquet", "bill.parquet", "history.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"apiVersion": "v1", "items": [{"kind": "Pod", "metadata": {"na', "truncated"),
        ("", "empty"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, content: str, expected: str) -> None:
    bad = tmp_path / "pods.json"
    bad.write_text(content)
    out = tmp_path / "hist"
    result = runner.invoke(app, ["import", f"kubectl:{bad}", "--out", str(out)])
    assert result.exit_code == 2
    assert expected in result.output and str(bad) in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_option_errors(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["import", "--prometheus", "http://127.0.0.1:9", "--out", str(tmp_path / "h")]
    )
    assert result.exit_code == 2 and "--prometheus needs --start" in result.output
    result = runner.invoke(app, ["import", "--out", str(tmp_path / "h")])
    assert result.exit_code == 2 and "no sources given" in result.output
    result = runner.invoke(
        app, ["import", str(DATA / "tiny.swf"), "--swf-processors", "tpus", "--out", str(tmp_path / "h")]
    )
    assert result.exit_code == 2 and "allowed are cpus, gpus" in result.output
    token = tmp_path / "token"
    token.write_text("line1\nline2\n")
    result = runner.invoke(app, ["import", "--prometheus", "http://127.0.0.1:9", "--start", "0", "--token-file",
                                 str(token), "--out", str(tmp_path / "h")])  # fmt: skip
    assert result.exit_code == 2 and "one line" in result.output and "line1" not in result.output


def test_load_history_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a folder"):
        load_history(tmp_path / "missing")
    with pytest.raises(SpecError, match=r"no history\.json"):
        load_history(tmp_path)
    write_history(import_sources([str(DATA / "tiny.swf")]), tmp_path / "h")
    (tmp_path / "h" / "jobs.parquet").write_bytes(b"not parquet")
    with pytest.raises(SpecError, match=r"jobs\.parquet: cannot be read as Parquet"):
        load_history(tmp_path / "h")


@pytest.mark.parametrize("fmt", ["kubectl", "slurm", "focus", "philly", "swf"])
def test_binary_file_or_folder_is_one_clear_error(tmp_path: Path, fmt: str) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(
        b"{\xff\xfe\x00\x81 not text" * 100 if fmt in ("kubectl", "philly") else b"\xff\xfe\x00\x81" * 100
    )
    for target in (binary, tmp_path):
        result = runner.invoke(app, ["import", f"{fmt}:{target}", "--out", str(tmp_path / "h")])
        assert result.exit_code == 2, result.output
        assert str(target) in result.output and "Traceback" not in result.output


def test_load_history_reads_a_minimal_folder(tmp_path: Path) -> None:
    """Only jobs.parquet and a history.json with epoch and end_s (no format key, no nodes or bill)."""
    import pyarrow.parquet as pq

    full = import_sources([str(DATA / "tiny.swf")])
    folder = tmp_path / "min"
    folder.mkdir()
    pq.write_table(full.jobs, folder / "jobs.parquet")
    (folder / "history.json").write_text(json.dumps({"epoch": full.epoch, "end_s": full.end_s}))
    loaded = load_history(folder)
    assert loaded.jobs.equals(full.jobs) and loaded.nodes.num_rows == 0 and loaded.bill.num_rows == 0
    (folder / "history.json").write_text(
        json.dumps({"format": "other/2", "epoch": full.epoch, "end_s": full.end_s})
    )
    with pytest.raises(SpecError, match="'format' is not"):
        load_history(folder)


def test_end_before_the_records_is_refused(tmp_path: Path) -> None:
    """--end 2024-05-01T10:30:00Z is 1800 s after the epoch; job 1001 ran until 7500 s: one paragraph, exit 2."""
    out = tmp_path / "h"
    result = runner.invoke(
        app, ["import", str(DATA / "sacct.txt"), "--end", "2024-05-01T10:30:00Z", "--out", str(out)]
    )
    assert result.exit_code == 2 and "after the record's end_s" in result.output and "1001" in result.output
    assert not out.exists()
