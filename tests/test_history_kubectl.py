"""kubectl history import: pods, Jobs, a JobSet, Kueue Workloads, events and nodes (tests/kube_history_builders.py).

Epoch = the earliest submit = Job train-1's creationTimestamp 2024-05-01T10:00:00Z; every expected time
below is seconds from it, worked out from the fixture's clock times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.json_stream import stream_objects
from fleetlab.spec.history.sources import import_sources
from kube_history_builders import kube_list, pod, small_world, write_json


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    history = import_sources(small_world(tmp_path_factory.mktemp("kube")))
    return {row["job_id"]: row for row in history.jobs.to_pylist()}


def test_history_epoch_end_and_skips(tmp_path: Path) -> None:
    history = import_sources(small_world(tmp_path))
    assert history.epoch == "2024-05-01T10:00:00Z"
    # The latest instant any record mentions: Workload train-1 Finished at 11:00:30 = 3630 s.
    assert history.end_s == 3630.0
    assert history.skipped == {
        "kubectl: pod Running without spec.nodeName": 1,  # ghost
        "kubectl: pod finished before it started (clocks went backwards)": 1,  # backwards
    }
    states = sorted(history.jobs.column("state").to_pylist())
    assert states == ["completed", "failed", "failed", "pending", "running"]
    # gpu-node-1's NodeNotReady event at 10:31:00 (1860 s) with no NodeReady after it: a down window
    # from 1860 s to the end of the record (a null end_s).
    assert history.node_down.to_pylist() == [
        {"node": "gpu-node-1", "start_s": 1860.0, "end_s": None, "state": "down",
         "reason": "still so at the dump", "source": "kubectl"}
    ]  # fmt: skip


def test_job_with_kueue_workload_and_two_pods(jobs: dict[str, dict[str, Any]]) -> None:
    job = jobs["team-a/Job/train-1"]
    # submit 10:00:00 (Job created) -> 0; QuotaReserved 10:02:00 -> 120; first PodScheduled 10:02:03 -> 123;
    # first container start 10:04:00 -> 240; end = latest of pod finish 11:00:20, Job completion 11:00:25
    # and Workload Finished 11:00:30 -> 3630; run_s = 3630 - 240 = 3390.
    assert (job["submit_s"], job["admitted_s"], job["scheduled_s"], job["running_s"], job["end_s"]) == (
        0.0, 120.0, 123.0, 240.0, 3630.0
    )  # fmt: skip
    assert job["run_s"] == 3390.0
    assert (job["state"], job["end_reason"], job["pods"], job["gpus_per_pod"]) == (
        "completed",
        "Completed",
        2,
        4.0,
    )
    assert (job["cpu_per_pod"], job["memory_per_pod"]) == (16.0, 64 * 2**30)
    assert (job["team"], job["queue"], job["gpu_model"], job["nodes"]) == (
        "research", "team-a-queue", "H100", "gpu-node-1"
    )  # fmt: skip
    # Pulled events: pod 0 pulled for 1m52.5s = 112.5 s, pod 1 found the image present (0 s); max = 112.5.
    assert job["image_pull_s"] == 112.5
    assert (job["restarts"], job["evictions"]) == (0, 0)


def test_jobset_folds_its_jobs_and_counts_kueue_requeue(jobs: dict[str, dict[str, Any]]) -> None:
    job = jobs["team-b/JobSet/js-1"]
    assert not any(key.startswith("team-b/Job/js-1") for key in jobs)
    # Workload created 10:05:00 -> 300 (before its Jobs at 10:20:00); QuotaReserved 10:20:00 -> 1200;
    # PodScheduled 10:20:02 -> 1202; the driver started first, 10:20:30 -> 1230. Still running: no end.
    assert (job["submit_s"], job["admitted_s"], job["scheduled_s"], job["running_s"], job["end_s"]) == (
        300.0, 1200.0, 1202.0, 1230.0, None
    )  # fmt: skip
    # Two Jobs of one pod each, but only the workers' pod holds GPUs: the job is 1 GPU pod of 8 GPUs with
    # the workers' 32 CPUs and 256 GiB (the CPU-only driver is left out of the GPU shape), so
    # pods x gpus_per_pod = 8 GPUs, what the JobSet really holds.
    assert (job["state"], job["pods"], job["gpus_per_pod"], job["cpu_per_pod"]) == ("running", 1, 8.0, 32.0)
    assert job["memory_per_pod"] == 256 * 2**30
    # restarts: worker restartCount 2 + requeueState.count 1 = 3; evictions: the one requeue.
    assert (job["restarts"], job["evictions"], job["queue"], job["priority"]) == (3, 1, "team-b-queue", 100)


def test_failed_job_pending_pod_and_preempted_pod(jobs: dict[str, dict[str, Any]]) -> None:
    oom = jobs["team-a/Job/oom-job"]
    # Job created 10:09:57 -> 597; Failed condition 10:15:05 -> 905 is later than the pod's finish (900).
    assert (oom["submit_s"], oom["end_s"], oom["state"], oom["end_reason"]) == (
        597.0,
        905.0,
        "failed",
        "BackoffLimitExceeded",
    )
    assert oom["restarts"] == 0  # status.failed 1 is the failure itself, not a retry
    pending = jobs["team-c/Pod/notebook"]
    assert (pending["state"], pending["submit_s"], pending["scheduled_s"], pending["end_s"]) == (
        "pending",
        1800.0,
        None,
        None,
    )
    victim = jobs["team-b/Pod/victim"]
    # DisruptionTarget PreemptionByScheduler and one Preempted event describe the same eviction.
    assert (victim["state"], victim["evictions"], victim["end_s"], victim["end_reason"]) == (
        "failed",
        1,
        720.0,
        "Error",
    )


def test_node_row(tmp_path: Path) -> None:
    history = import_sources(small_world(tmp_path))
    node = history.nodes.to_pylist()[0]
    assert history.nodes.column("node").to_pylist() == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert (node["node"], node["pool"], node["gpu_model"], node["gpus"], node["cpu"]) == (
        "gpu-node-1", "h100-pool", "H100", 8, 207.0
    )  # fmt: skip
    assert node["memory"] == 1842 * 2**30 and node["zone"] == "us-central1-a"
    assert node["created_s"] is None  # created 2024-04-01, before the history began


def test_pods_jobs_in_any_file_order_give_the_same_history(tmp_path: Path) -> None:
    files = small_world(tmp_path)
    forward = import_sources(files)
    backward = import_sources(list(reversed(files)))
    assert forward.jobs.equals(backward.jobs) and forward.nodes.equals(backward.nodes)


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    files = small_world(tmp_path)
    text = files[0].read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(SpecError) as err:
        import_sources([f"kubectl:{cut}"])
    message = str(err.value)
    assert str(cut) in message and "line" in message and "truncated" in message


def test_secret_dump_is_refused_without_echoing_it(tmp_path: Path) -> None:
    secret = write_json(tmp_path / "s.json", kube_list([{"apiVersion": "v1", "kind": "Secret",
                                                          "metadata": {"name": "x"}, "data": {"token": "c2VjcmV0"}}]))  # fmt: skip
    with pytest.raises(SpecError) as err:
        import_sources([f"kubectl:{secret}"])
    assert "Secret" in str(err.value) and "c2VjcmV0" not in str(err.value)


def test_bad_quantity_and_timestamp_are_errors(tmp_path: Path) -> None:
    bad = pod("ns", "p", "10:00:00", scheduled="10:00:01", started="10:00:02", cpu="16GG")
    path = write_json(tmp_path / "bad.json", kube_list([bad]))
    with pytest.raises(SpecError, match=r"Pod ns/p.*cpu"):
        import_sources([path])
    worse = pod("ns", "p", "10:00:00")
    worse["metadata"]["creationTimestamp"] = "yesterday"
    path = write_json(tmp_path / "bad2.json", kube_list([worse]))
    with pytest.raises(SpecError, match=r"creationTimestamp: 'yesterday' is not an RFC 3339"):
        import_sources([path])


def test_deep_nesting_and_huge_numbers_are_bounded(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"kind": "List", "items": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    with pytest.raises(SpecError, match=r"nested deeper than 64 levels"):
        list(stream_objects(deep))
    far = pod("ns", "p", "10:00:00")
    far["metadata"]["creationTimestamp"] = "9999-01-01T00:00:00Z"
    path = write_json(tmp_path / "far.json", kube_list([far]))
    with pytest.raises(SpecError, match=r"outside 1990\.\.2100"):
        import_sources([path])


def test_stream_reads_items_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fleetlab.spec.history.json_stream as js

    monkeypatch.setattr(js, "CHUNK_CHARS", 97)  # every object spans several chunks
    items = [pod("ns", f"p{i}", "10:00:00") for i in range(20)]
    path = write_json(tmp_path / "many.json", kube_list(items))
    names = [o["metadata"]["name"] for o in stream_objects(path)]
    assert names == [f"p{i}" for i in range(20)]
    assert json.loads(path.read_text())["items"][3]["metadata"]["name"] == "p3"


def test_yaml_and_single_object_files(tmp_path: Path) -> None:
    import yaml

    one = pod(
        "ns",
        "solo",
        "10:00:00",
        scheduled="10:00:05",
        started="10:00:10",
        finished="10:10:10",
        phase="Succeeded",
    )
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(kube_list([one])))
    write_json(tmp_path / "p.json", one)
    for name in ("p.yaml", "p.json"):
        history = import_sources([f"kubectl:{tmp_path / name}"])
        (row,) = history.jobs.to_pylist()
        assert (row["job_id"], row["scheduled_s"], row["running_s"], row["end_s"]) == (
            "ns/Pod/solo",
            5.0,
            10.0,
            610.0,
        )


def test_owner_kinds_lws_pytorchjob_and_workload_only(tmp_path: Path) -> None:
    """LeaderWorkerSet pods (owned by its StatefulSets, named by the lws label), PyTorchJob pods (owned by
    the PyTorchJob, whose Succeeded condition ends it), and a job known only from its finished Workload
    (pods and Job already garbage-collected). Epoch: the Workload's creation, 09:00:00."""
    from kube_history_builders import condition, owner, workload

    lws = {"leaderworkerset.sigs.k8s.io/name": "llm", "leaderworkerset.sigs.k8s.io/group-index": "0"}
    items = [
        pod("serve", "llm-0", "10:00:00", owner_ref=owner("StatefulSet", "llm", "apps/v1"), scheduled="10:00:01",
            started="10:00:30", gpus=8, labels=lws),
        pod("serve", "llm-0-1", "10:00:00", owner_ref=owner("StatefulSet", "llm-0", "apps/v1"),
            scheduled="10:00:01", started="10:00:40", gpus=8, labels=lws),
        pod("ml", "bert-master-0", "09:30:00", owner_ref=owner("PyTorchJob", "bert", "kubeflow.org/v1"),
            scheduled="09:30:05", started="09:31:00", finished="09:50:00", phase="Succeeded", gpus=1),
        pod("ml", "bert-worker-0", "09:30:00", owner_ref=owner("PyTorchJob", "bert", "kubeflow.org/v1"),
            scheduled="09:30:05", started="09:31:10", finished="09:50:00", phase="Succeeded", gpus=1),
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
         "metadata": {"name": "bert", "namespace": "ml", "creationTimestamp": "2024-05-01T09:29:58Z"},
         "status": {"conditions": [condition("Created", "09:29:58"), condition("Succeeded", "09:50:02")]}},
        workload("ml", "job-old-5d2c1", "09:00:00", owner("Job", "old"), queue="ml-queue", count=4, gpus=2,
                 conditions=[condition("QuotaReserved", "09:05:00"), condition("Admitted", "09:05:00"),
                             condition("Finished", "09:25:00", reason="Failed", message="Job failed")]),
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "reason": "Preempted",
         "note": "Preempted by pod x on node gpu-node-1", "regarding": {"kind": "Pod", "namespace": "ml",
                                                                         "name": "bert-worker-0"},
         "series": {"count": 2, "lastObservedTime": "2024-05-01T09:40:00.000000Z"},
         "eventTime": "2024-05-01T09:35:00.000000Z", "metadata": {"name": "bert-worker-0.1", "namespace": "ml"}},
    ]  # fmt: skip
    history = import_sources([write_json(tmp_path / "more.json", kube_list(items))])
    jobs = {row["job_id"]: row for row in history.jobs.to_pylist()}
    assert history.epoch == "2024-05-01T09:00:00Z"
    llm = jobs["serve/LeaderWorkerSet/llm"]
    assert (llm["pods"], llm["job_class"], llm["state"], llm["running_s"]) == (
        2,
        "inference",
        "running",
        3630.0,
    )
    bert = jobs["ml/PyTorchJob/bert"]
    # created 09:29:58 -> 1798; first start 09:31:00 -> 1860; Succeeded 09:50:02 -> 3002; 2 preemptions.
    assert (bert["submit_s"], bert["running_s"], bert["end_s"], bert["state"], bert["pods"], bert["evictions"]) == (
        1798.0, 1860.0, 3002.0, "completed", 2, 2
    )  # fmt: skip
    old = jobs["ml/Job/old"]
    # Only the Workload: created 0, QuotaReserved 300, Finished (Failed) 1500; 4 pods of 2 GPUs each.
    assert (old["submit_s"], old["admitted_s"], old["end_s"], old["state"], old["pods"], old["gpus_per_pod"]) == (
        0.0, 300.0, 1500.0, "failed", 4, 2.0
    )  # fmt: skip
    assert old["queue"] == "ml-queue" and old["scheduled_s"] is None


def test_documents_appended_to_one_file(tmp_path: Path) -> None:
    """`kubectl get pods -A -o json > f; kubectl get jobs -A -o json >> f` gives two documents in a row."""
    files = small_world(tmp_path)
    both = tmp_path / "both.json"
    both.write_text(files[0].read_text() + "\n" + files[3].read_text())
    apart = import_sources([files[0], files[3]])
    together = import_sources([f"kubectl:{both}"])
    assert together.jobs.equals(apart.jobs) and together.nodes.num_rows == 3


def test_syntax_error_mid_file_is_reported_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fleetlab.spec.history.json_stream as js

    monkeypatch.setattr(js, "CHUNK_CHARS", 4096)
    items = [pod("ns", f"p{i}", "10:00:00") for i in range(30)]
    text = json.dumps(kube_list(items), indent=4)
    broken = text.replace('"name": "p3",', '"name": "p3",,', 1)  # a stray comma in the 4th pod
    line = broken[: broken.index(",,")].count("\n") + 1
    path = tmp_path / "broken.json"
    path.write_text(broken)
    with pytest.raises(SpecError, match=rf"line {line}: invalid JSON: Expecting property name"):
        list(stream_objects(path))


def test_job_retries_count_as_restarts(tmp_path: Path) -> None:
    """batch/v1 Job status.failed counts pods the controller replaced: a Job that failed on its third pod
    (failed 3) retried twice; one that succeeded after one failed pod (failed 1) retried once."""
    from kube_history_builders import condition, job

    items = [
        job("ns", "gives-up", "10:00:00", failed=3, conditions=[condition("Failed", "10:30:00", reason="BackoffLimitExceeded")]),
        job("ns", "recovers", "10:00:00", failed=1, succeeded=1, completion="10:40:00",
            conditions=[condition("Complete", "10:40:00")]),
    ]  # fmt: skip
    history = import_sources([write_json(tmp_path / "jobs.json", kube_list(items))])
    restarts = {row["job_id"]: row["restarts"] for row in history.jobs.to_pylist()}
    assert restarts == {"ns/Job/gives-up": 2, "ns/Job/recovers": 1}


def test_mig_slice_is_a_share_of_one_gpu(tmp_path: Path) -> None:
    """A pod asking for nvidia.com/mig-3g.40gb (mixed strategy) holds 3 of an A100/H100's 7 compute slices:
    gpu_milli_per_pod = round(1000 * 3 / 7) = 429, no whole GPU."""
    mig = pod("ns", "mig-pod", "10:00:00", scheduled="10:00:01", started="10:00:02")
    mig["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/mig-3g.40gb": "1"}
    history = import_sources([write_json(tmp_path / "mig.json", kube_list([mig]))])
    (row,) = history.jobs.to_pylist()
    assert (row["gpus_per_pod"], row["gpu_milli_per_pod"], row["job_class"]) == (0.429, 429, "training")


def test_scheduled_not_started_runs_and_readmission_hides_first_admission(tmp_path: Path) -> None:
    """A pod bound to a node but still pulling its image (phase Pending, PodScheduled True) holds the node:
    the job is running, not pending. A Workload whose QuotaReserved time (10:30, a re-admission) is later
    than the first pod's scheduling (10:05) no longer knows its first admission: admitted_s is null."""
    from kube_history_builders import condition, owner, workload

    pulling = pod("ns", "pulling", "10:00:00", scheduled="10:00:02", phase="Pending", gpus=1)
    readmitted = pod("ns", "re-0", "10:00:00", owner_ref=owner("Job", "re"), scheduled="10:05:00",
                     started="10:06:00", gpus=1)  # fmt: skip
    wl = workload("ns", "job-re-1", "10:00:00", owner("Job", "re"), queue="q",
                  conditions=[condition("QuotaReserved", "10:30:00"), condition("Evicted", "10:20:00", status="False")])  # fmt: skip
    history = import_sources([write_json(tmp_path / "p.json", kube_list([pulling, readmitted, wl]))])
    jobs = {row["job_id"]: row for row in history.jobs.to_pylist()}
    assert (jobs["ns/Pod/pulling"]["state"], jobs["ns/Pod/pulling"]["scheduled_s"]) == ("running", 2.0)
    assert (
        jobs["ns/Job/re"]["admitted_s"],
        jobs["ns/Job/re"]["scheduled_s"],
        jobs["ns/Job/re"]["evictions"],
    ) == (None, 300.0, 1)


def test_launcher_without_gpus_is_not_a_gpu_pod(tmp_path: Path) -> None:
    """An MPIJob-style job: one CPU launcher and 4 workers of 8 GPUs, all owned by the job. GPU pods: 4 of 8
    GPUs (32 GPUs held), not 5 x 8 = 40."""
    from kube_history_builders import owner

    ref = owner("MPIJob", "allreduce", "kubeflow.org/v2beta1")
    items = [
        pod(
            "ml",
            "allreduce-launcher",
            "10:00:00",
            owner_ref=ref,
            scheduled="10:00:01",
            started="10:00:05",
            cpu="1",
        )
    ]
    items += [pod("ml", f"allreduce-worker-{i}", "10:00:00", owner_ref=ref, scheduled="10:00:01", started="10:00:04",
                  gpus=8, cpu="64", memory="512Gi") for i in range(4)]  # fmt: skip
    history = import_sources([write_json(tmp_path / "mpi.json", kube_list(items))])
    (row,) = history.jobs.to_pylist()
    assert (row["pods"], row["gpus_per_pod"], row["cpu_per_pod"], row["memory_per_pod"]) == (
        4,
        8.0,
        64.0,
        512 * 2**30,
    )
