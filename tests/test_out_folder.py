"""The one output writer: never delete what fleetlab did not write, never write outside --out, clean up
after killed runs, lock the folder, and let no worker outlive its sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fleetlab.spec.errors import SpecError
from fleetlab.spec.out_folder import (
    MARKER,
    clean_leftovers,
    folder_lock,
    mark,
    safe_name,
    staged_output,
    unique_names,
)
from test_cli import files, invoke  # noqa: F401  (fixture)


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_out_dot_in_a_working_folder_is_refused_and_nothing_is_deleted(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("months of work")
    monkeypatch.chdir(work)
    result = invoke("simulate", str(files["small"]), "--out", ".")
    assert result.exit_code == 2
    assert "is the folder this command runs in" in result.stderr
    assert "--out results" in result.stderr
    assert (work / "thesis.tex").read_text() == "months of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


@pytest.mark.parametrize("command", ["simulate", "compare", "export", "ledger"])
def test_every_out_command_refuses_a_foreign_folder(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    command: str,
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    args = ["plan", "ledger"] if command == "ledger" else [command]
    result = invoke(*args, str(files["small"]), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "fleetlab did not write" in result.stderr
    assert (out / "notes.txt").read_text() == "keep"


def test_force_replaces_a_foreign_folder(files: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("gone")
    result = invoke("simulate", str(files["small"]), "--out", str(out), "--force")
    assert result.exit_code == 0, result.output
    assert not (out / "notes.txt").exists()
    assert (out / MARKER).is_file() and (out / "summary.json").is_file()


def test_rerun_replaces_its_own_folder_and_an_empty_one_is_fine(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert invoke("simulate", str(files["small"]), "--out", str(out)).exit_code == 0
    assert invoke("simulate", str(files["small"]), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no staging, old folder or lock left


def test_names_that_become_paths_cannot_leave_the_folder() -> None:
    assert safe_name("..") == "_.."
    assert safe_name(".") == "_."
    assert safe_name("../../etc") == "_.._.._etc"
    assert safe_name("a/b\\c") == "a_b_c"
    assert safe_name("") == "run"
    assert safe_name(".hidden") == "_.hidden"
    assert safe_name("ünï") == "_n_"
    assert len(safe_name("x" * 1000)) == 100
    # Two labels that would share a folder (also on case-insensitive file systems) get distinct ones.
    assert unique_names(["a/b", "a_b", "A_B", ".."]) == ["a_b", "a_b-2", "A_B-3", "_.."]


def test_compare_of_scenarios_named_dot_dot_writes_inside_out(
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    from fleetlab.experiment.output import write_results
    from fleetlab.experiment.run import run_one
    from fleetlab.spec.loader import load

    run = run_one(load(str(files["small"])), "default")
    run = replace(run, label="..")
    out = tmp_path / "box" / "out"
    write_results([run, run], out)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "_..", "_..-2", "summary.json"]
    assert sorted(p.name for p in (tmp_path / "box").iterdir()) == ["out"]


def test_leftovers_of_killed_runs_are_removed_on_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pid = dead_pid()
    for name in (f".out.tmp-{pid}-abc", f".out.old-{pid}"):
        (tmp_path / name).mkdir()
        mark(tmp_path / name)
    out.mkdir()
    mark(out)
    foreign = tmp_path / f".out.tmp-{pid}-zzz"  # not marked: not fleetlab's, left alone
    foreign.mkdir()
    with staged_output(out) as staging:
        (staging / "a.txt").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == [foreign.name, "out"]
    assert (out / "a.txt").read_text() == "new"


def test_kill_between_the_renames_puts_the_old_results_back(tmp_path: Path) -> None:
    # The previous results were moved aside to .out.old-PID and the process died before the new
    # folder was renamed in: --out is missing. The next run restores it before anything else.
    out = tmp_path / "out"
    old = tmp_path / f".out.old-{dead_pid()}"
    old.mkdir()
    mark(old)
    (old / "summary.json").write_text("{}")
    assert clean_leftovers(out) == []
    assert (out / "summary.json").read_text() == "{}"
    assert not old.exists()


def test_a_second_writer_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with folder_lock(tmp_path / ".out.lock", out), pytest.raises(SpecError) as exc, staged_output(out):
        pass
    assert "another fleetlab run is writing this folder" in str(exc.value)
    with staged_output(out) as staging:  # free again once the first writer is done
        (staging / "x").write_text("1")
    assert (out / "x").is_file()


def test_experiment_run_refuses_a_foreign_folder(tmp_path: Path) -> None:
    from fleetlab.experiment.sweep import run_sweep

    out = tmp_path / "exp"
    out.mkdir()
    (out / "data.csv").write_text("mine")
    with pytest.raises(SpecError, match="fleetlab did not write"):
        run_sweep(None, out)  # type: ignore[arg-type]  # refused before the experiment is looked at
    assert (out / "data.csv").read_text() == "mine"
    assert [p.name for p in out.iterdir()] == ["data.csv"]  # not even the lock file is left behind


def test_experiment_run_force_empties_a_foreign_folder_and_runs(tmp_path: Path) -> None:
    from test_experiment import write_experiment

    exp = write_experiment(tmp_path, "name: one\nbase: tiny.yaml\nseeds: [1]\nvariants: [{name: base}]\n")
    out = tmp_path / "exp"
    out.mkdir()
    (out / "data.csv").write_text("mine")
    (out / "sub").mkdir()
    (tmp_path / "outside.txt").write_text("kept")
    (out / "link").symlink_to(tmp_path / "outside.txt")
    refused = invoke("experiment", "run", str(exp), "--out", str(out), "--jobs", "1")
    assert refused.exit_code == 2 and "add --force" in refused.stderr
    assert (out / "data.csv").read_text() == "mine"
    result = invoke("experiment", "run", str(exp), "--out", str(out), "--jobs", "1", "--force")
    assert result.exit_code == 0, result.output
    assert not (out / "data.csv").exists() and not (out / "sub").exists() and not (out / "link").exists()
    assert (tmp_path / "outside.txt").read_text() == "kept"  # a link is removed, never followed
    assert (out / MARKER).is_file() and (out / "manifest.json").is_file()


def test_experiment_run_force_resumes_its_own_folder(tmp_path: Path) -> None:
    from test_experiment import write_experiment

    exp = write_experiment(tmp_path, "name: one\nbase: tiny.yaml\nseeds: [1]\nvariants: [{name: base}]\n")
    out = tmp_path / "exp"
    first = invoke("experiment", "run", str(exp), "--out", str(out), "--jobs", "1")
    assert first.exit_code == 0, first.output
    again = invoke("experiment", "run", str(exp), "--out", str(out), "--jobs", "1", "--force")
    assert again.exit_code == 0, again.output
    assert "0 run(s) executed, 1 already finished" in again.stderr


def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    # A driver starts one pool worker (with the engine's initializer) that would idle for an hour, then
    # is SIGKILLed: the worker must be gone within a few seconds.
    script = textwrap.dedent(
        """
        import os, sys, time
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        from fleetlab.experiment.engines import _die_with_parent

        def idle(_):
            return os.getpid()

        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(1, mp_context=ctx, initializer=_die_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                print(pool.submit(idle, 0).result(), flush=True)
                time.sleep(3600)
        """
    )
    path = tmp_path / "driver.py"
    path.write_text(script)
    driver = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    worker = int(driver.stdout.readline())
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        stat = Path(f"/proc/{worker}/stat")
        if stat.exists() and ") Z " in stat.read_text():  # exited; only init has yet to reap it
            return
        time.sleep(0.2)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the worker outlived its driver")


def test_second_experiment_run_on_one_folder_stops_with_a_clear_message(tmp_path: Path) -> None:
    # While one sweep holds the folder's lock, a second one stops at once (instead of crashing later on
    # DuckDB's own file lock or interleaving run folders).
    from fleetlab.experiment.plan import load_experiment
    from fleetlab.experiment.sweep import SWEEP_LOCK, run_sweep
    from test_experiment import write_experiment

    experiment = load_experiment(write_experiment(tmp_path))
    out = tmp_path / "exp"
    out.mkdir()
    with folder_lock(out / SWEEP_LOCK, out), pytest.raises(SpecError) as exc:
        run_sweep(experiment, out)
    assert "another fleetlab run is writing this folder" in str(exc.value)
