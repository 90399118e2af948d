"""``fleetlab lint``: every rule on a realistic manifest, the API server's wording, and the exit codes.

Messages GPU001-GPU003 are the API server's (pkg/apis/core/validation/validation.go,
validateResourceRequirements and ValidateResourceQuantityValue); GPU006/GPU007/GPU009 quote
kube-scheduler's FitError (``0/N nodes are available: ...``) for the same pod on an empty cluster.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.lint.check import LintReport, lint_paths
from fleetlab.lint.findings import RULES
from fleetlab.lint.resources import canonical
from fleetlab.model.scenario import Scenario
from fleetlab.spec.loader import load_scenario

FIXTURES = Path(__file__).parent / "fixtures" / "manifests"
CLUSTER = FIXTURES / "cluster.yaml"


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return load_scenario(str(CLUSTER))[0]


def lint(name: str, scenario: Scenario | None = None) -> LintReport:
    return lint_paths([FIXTURES / name], scenario)


def rules(report: LintReport) -> list[str]:
    return [f.rule for f in report.findings]


def test_clean_manifests_have_no_finding_with_or_without_the_scenario(scenario: Scenario) -> None:
    for sc in (None, scenario):
        report = lint("clean.yaml", sc)
        assert report.findings == ()
        assert report.objects == 4  # the Service counts as an object but has no pod template
        assert report.pod_templates == 4


def test_gpu001_fractional_gpu_uses_the_api_servers_integer_message() -> None:
    (f,) = lint("fractional.yaml").findings
    assert f.rule == "GPU001" and f.severity == "error"
    assert f.path == "spec.containers[0].resources.limits[nvidia.com/gpu]"
    # Quantity.String() of 0.5 is "500m": the API server prints the canonical form
    assert (
        f.message
        == 'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer'
    )
    assert f.line == 13
    assert "mig" in f.fix


def test_gpu002_and_gpu003_request_limit_rules_of_non_overcommitable_resources() -> None:
    report = lint("request-limit.yaml")
    assert rules(report) == ["GPU002", "GPU003"]
    mismatch, missing = report.findings
    assert mismatch.path == "spec.template.spec.containers[0].resources.requests"
    assert mismatch.message.endswith('Invalid value: "1": must be equal to nvidia.com/gpu limit of 2')
    assert missing.path == "spec.template.spec.containers[1].resources.limits"
    assert "Required value: Limit must be set for non overcommitable resources" in missing.message


def test_gpu004_init_container_gpus_warn_and_exit_zero_in_json() -> None:
    report = lint("init-gpu.json")
    assert rules(report) == ["GPU004"]
    (f,) = report.findings
    assert f.severity == "warning" and report.errors == 0
    assert f.path == "spec.jobTemplate.spec.template.spec.initContainers[0].resources"
    assert f.line == 17  # JSON files get lines too
    result = CliRunner().invoke(cli.app, ["lint", str(FIXTURES / "init-gpu.json"), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["warnings"] == 1


def test_gpu005_mig_profile_of_another_model(scenario: Scenario) -> None:
    report = lint("mig-profile.yaml", scenario)
    assert rules(report) == ["GPU005"]  # not reported again as "no node has room" (GPU009)
    (f,) = report.findings
    assert f.path == "spec.template.spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]"
    assert "A100-80GB" in f.message and "'1g.5gb'" in f.message
    assert "nvidia.com/mig-1g.10gb" in f.fix


def test_gpu006_missing_toleration_for_the_gpu_taint(scenario: Scenario) -> None:
    assert lint("no-toleration.yaml").findings == ()  # taints are scenario facts
    (f,) = lint("no-toleration.yaml", scenario).findings
    assert f.rule == "GPU006" and f.path == "spec.template.spec.tolerations"
    assert "nvidia.com/gpu=present:NoSchedule" in f.message
    # v1.35 wording (kubernetes#134740); the selector rules out the 4 non-H100 nodes first
    assert (
        "0/8 nodes are available: 4 node(s) didn't match Pod's node affinity/selector, "
        "4 node(s) had untolerated taint(s)." in f.message
    )
    assert "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}" in f.fix


def test_gpu006_named_taint_before_v1_35_and_extended_resource_toleration(scenario: Scenario) -> None:
    old = scenario.model_copy(
        update={"scheduler": scenario.scheduler.model_copy(update={"kubernetes_version": "1.34"})}
    )
    (f,) = lint("no-toleration.yaml", old).findings
    assert "4 node(s) had untolerated taint {nvidia.com/gpu: present}" in f.message
    # With the ExtendedResourceToleration admission plugin the pod gets the toleration for what it requests.
    cluster = scenario.cluster.model_copy(update={"extended_resource_toleration": True})
    assert lint("no-toleration.yaml", scenario.model_copy(update={"cluster": cluster})).findings == ()


def test_gpu007_selector_no_pool_satisfies(scenario: Scenario) -> None:
    (f,) = lint("no-pool.yaml", scenario).findings
    assert f.rule == "GPU007" and f.path == "spec.nodeSelector"
    assert "0/8 nodes are available: 8 node(s) didn't match Pod's node affinity/selector." in f.message
    assert "NVIDIA-H100-80GB-HBM3" in f.fix and "NVIDIA-A100-SXM4-80GB" in f.fix


def test_gpu008_jobset_gang_larger_than_any_rack(scenario: Scenario) -> None:
    (f,) = lint("gang-too-big.yaml", scenario).findings
    assert f.rule == "GPU008"
    assert f.path == (
        "spec.replicatedJobs[0].template.spec.template.metadata.annotations"
        "[kueue.x-k8s.io/podset-required-topology]"
    )
    assert "3 pod(s) x 8 nvidia.com/gpu = 24 nvidia.com/gpu" in f.message
    assert "16 nvidia.com/gpu" in f.message and "holds only 2" in f.message


def test_gpu008_zone_level_fits_and_plain_pod_group(scenario: Scenario, tmp_path: Path) -> None:
    text = (
        (FIXTURES / "gang-too-big.yaml")
        .read_text()
        .replace("fleetlab.io/rack", "topology.kubernetes.io/zone")
    )
    wider = tmp_path / "zone.yaml"
    wider.write_text(text)
    assert lint_paths([wider], scenario).findings == ()  # 4 H100 nodes in zone-a hold 3 pods of 8
    (f,) = lint("pod-group.yaml", scenario).findings
    assert f.rule == "GPU008" and "pod group 'allreduce' (3 pod(s))" in f.message


def test_gpu008_exclusive_topology_counts_each_child_job(scenario: Scenario, tmp_path: Path) -> None:
    jobset = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: slices
  annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: fleetlab.io/rack}
spec:
  replicatedJobs:
    - name: slice
      replicas: 2
      template:
        spec:
          parallelism: PARALLEL
          template:
            spec:
              tolerations: [{key: nvidia.com/gpu, operator: Exists}]
              containers:
                - name: w
                  image: nvcr.io/nvidia/nemo:24.07
                  resources: {limits: {nvidia.com/gpu: 8}}
"""
    ok = tmp_path / "ok.yaml"
    ok.write_text(jobset.replace("PARALLEL", "2"))
    assert lint_paths([ok], scenario).findings == ()  # 2 child Jobs of 2 pods: one rack each
    bad = tmp_path / "bad.yaml"
    bad.write_text(jobset.replace("PARALLEL", "3"))
    (f,) = lint_paths([bad], scenario).findings
    assert (
        f.rule == "GPU008" and f.path == "metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]"
    )


def test_gpu008_counts_pods_the_way_kueue_groups_them(scenario: Scenario, tmp_path: Path) -> None:
    workload = """\
apiVersion: apps/v1
kind: KIND
metadata: {name: w}
spec:
  replicas: 3
  selector: {matchLabels: {app: w}}
  template:
    metadata:
      labels: {app: w}
      annotations: {kueue.x-k8s.io/podset-required-topology: LEVEL}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]
"""
    results = {}
    for kind, level in (
        ("Deployment", "fleetlab.io/rack"),
        ("StatefulSet", "fleetlab.io/rack"),
        ("StatefulSet", "fleetlab.io/pool"),
    ):
        path = tmp_path / f"{kind}-{level.replace('/', '_')}.yaml"
        path.write_text(workload.replace("KIND", kind).replace("LEVEL", level))
        results[kind, level] = lint_paths([path], scenario).findings
    # Kueue's pod integration admits a Deployment's pods one by one; a StatefulSet's replicas are one group.
    assert results["Deployment", "fleetlab.io/rack"] == ()
    (f,) = results["StatefulSet", "fleetlab.io/rack"]
    assert f.rule == "GPU008" and "podset w (3 pod(s))" in f.message
    # A label every node has is still not a level of the cluster's Topology.
    (g,) = results["StatefulSet", "fleetlab.io/pool"]
    assert g.rule == "GPU008" and "not a level of the cluster's Topology" in g.message


def test_kuberay_and_leaderworkerset_pod_templates(scenario: Scenario, tmp_path: Path) -> None:
    (f,) = lint("ray-half-gpu.yaml", scenario).findings
    assert f.rule == "GPU001"
    assert (
        f.path
        == "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]"
    )
    clean = lint("lws-clean.yaml", scenario)
    assert clean.findings == () and clean.pod_templates == 2
    # size 4: the worker podset of each group is 3 pods of 8 GPUs, more than a rack's 16
    bigger = tmp_path / "lws.yaml"
    bigger.write_text((FIXTURES / "lws-clean.yaml").read_text().replace("size: 2", "size: 4"))
    (g,) = lint_paths([bigger], scenario).findings
    assert g.rule == "GPU008" and "podset workers (3 pod(s))" in g.message
    assert g.path.startswith("spec.leaderWorkerTemplate.workerTemplate.metadata.annotations")


def test_gpu009_more_gpus_per_pod_than_a_node_has(scenario: Scenario) -> None:
    (f,) = lint("too-many-gpus.yaml", scenario).findings
    assert f.rule == "GPU009"
    assert f.path == "spec.mpiReplicaSpecs.Worker.template.spec.containers"
    assert "0/8 nodes are available: 8 Insufficient nvidia.com/gpu." in f.message
    assert "the pod needs 16, the largest matching node has 8" in f.message


def test_gpu009_names_a_mig_resource_no_pool_advertises() -> None:
    default = load_scenario("default")[0]  # the built-in scenario has no MIG pool
    report = lint("clean.yaml", default)
    (f,) = report.findings
    assert f.rule == "GPU009" and f.object_ref == "Job/notebook-mig"
    assert (
        f.fix == "no node the pod may use advertises nvidia.com/mig-3g.40gb (no pool of the scenario has it)"
    )


def test_every_rule_has_a_fixture_that_triggers_it(scenario: Scenario) -> None:
    seen = {
        f.rule
        for path in FIXTURES.iterdir()
        if path.name not in ("cluster.yaml", "broken.yaml")
        for f in lint_paths([path], scenario).findings
    }
    assert seen == set(RULES) - {"GPU000"}


def test_quantity_rules_follow_the_api_server(tmp_path: Path) -> None:
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
    - name: sidecar
      restartPolicy: Always
      image: x
      resources: {limits: {nvidia.com/gpu: 1}}
  containers:
    - name: a
      image: x
      resources:
        requests: {nvidia.com/gpu: 3000m, example.com/fpga: "1", cpu: 500m}
        limits: {nvidia.com/gpu: "3", example.com/fpga: 2x}
"""
    path = tmp_path / "pod.yaml"
    path.write_text(pod)
    report = lint_paths([path])
    # 3000m == 3 (quantities compare by value); a sidecar is not an init step; a bad quantity is GPU000
    assert rules(report) == ["GPU000"]
    assert "quantities must match the regular expression" in report.findings[0].message


def test_mig_on_a_gpu_without_mig_and_an_unknown_profile(tmp_path: Path) -> None:
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  nodeSelector: {nvidia.com/gpu.product: SELECTOR}
  containers:
    - name: a
      image: x
      resources: {limits: {RESOURCE: 1}}
"""
    l4 = tmp_path / "l4.yaml"
    l4.write_text(pod.replace("SELECTOR", "NVIDIA-L4").replace("RESOURCE", "nvidia.com/mig-1g.10gb"))
    (f,) = lint_paths([l4]).findings
    assert f.rule == "GPU005" and "has no MIG support" in f.message
    anywhere = tmp_path / "any.yaml"
    anywhere.write_text(
        pod.replace("  nodeSelector: {nvidia.com/gpu.product: SELECTOR}\n", "").replace(
            "RESOURCE", "nvidia.com/mig-2g.11gb"
        )
    )
    (g,) = lint_paths([anywhere]).findings
    assert g.rule == "GPU005" and "no MIG-capable GPU model" in g.message
    h200 = tmp_path / "h200.yaml"
    h200.write_text(pod.replace("SELECTOR", "NVIDIA-H200").replace("RESOURCE", "nvidia.com/mig-1g.18gb"))
    assert lint_paths([h200]).findings == ()


def test_kind_list_and_multiple_documents_are_all_read(tmp_path: Path) -> None:
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            json.loads(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": 1}}}]},
            },
        ],
    }
    path = tmp_path / "list.json"
    path.write_text(json.dumps(listing, indent=2))
    (f,) = lint_paths([path]).findings
    assert f.rule == "GPU003" and f.object_ref == "Pod/p" and f.path == "spec.containers[0].resources.limits"


@pytest.mark.parametrize(
    ("value", "text"),
    [("0.5", "500m"), ("1.5", "1500m"), ("2", "2"), ("1000", "1k"), ("0.0005", "500u"), ("0", "0")],
)
def test_canonical_matches_quantity_string(value: str, text: str) -> None:
    assert canonical(Fraction(value)) == text


def test_exit_codes_and_unreadable_input(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli.app, ["lint", str(FIXTURES / "clean.yaml"), "--scenario", str(CLUSTER)])
    assert ok.exit_code == 0, ok.output
    assert "0 error(s)" in ok.stdout
    bad = runner.invoke(cli.app, ["lint", str(FIXTURES / "request-limit.yaml")])
    assert bad.exit_code == 1
    assert "GPU002" in bad.stdout and "limits[nvidia.com/gpu]" in bad.stdout  # rich markup escaped
    broken = runner.invoke(cli.app, ["lint", str(FIXTURES / "broken.yaml")])
    assert broken.exit_code == 2 and "line 5, column 2: invalid YAML" in broken.stderr
    bad_json = tmp_path / "x.json"
    bad_json.write_text('{"kind": "Pod",\n "spec": }')
    result = runner.invoke(cli.app, ["lint", str(bad_json)])
    assert result.exit_code == 2 and "line 2, column 10: invalid JSON" in result.stderr
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("---\nkind: Pod\n---\n- 1\n")
    result = runner.invoke(cli.app, ["lint", str(scalar)])
    assert result.exit_code == 2 and "document 2 is a list" in result.stderr
    missing = runner.invoke(cli.app, ["lint", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2 and "file not found" in missing.stderr
    no_scenario = runner.invoke(
        cli.app, ["lint", str(FIXTURES / "clean.yaml"), "--scenario", str(tmp_path / "none.yaml")]
    )
    assert no_scenario.exit_code == 2 and "traceback" not in no_scenario.output.lower()


def test_gpu010_gpu011_spread_key_missing_and_more_replicas_than_hosts(scenario: Scenario) -> None:
    """A DoNotSchedule constraint on a label the H100 nodes lack (PodTopologySpread's missing required
    label), and required hostname anti-affinity for 6 replicas on 4 H100 hosts."""
    assert lint("spread-unsatisfiable.yaml").findings == ()  # node labels are scenario facts
    by_rule = {f.rule: f for f in lint("spread-unsatisfiable.yaml", scenario).findings}
    assert sorted(by_rule) == ["GPU010", "GPU011"]
    assert by_rule["GPU010"].path == "spec.template.spec.topologySpreadConstraints[0].topologyKey"
    assert "missing required label" in by_rule["GPU010"].message
    assert "6 replica(s) must each have their own kubernetes.io/hostname domain" in by_rule["GPU011"].message
    assert "have 4; 2 replica(s) stay Pending" in by_rule["GPU011"].message


def test_gpu011_finds_the_own_labels_of_a_jobset_template(scenario: Scenario) -> None:
    """A JobSet's pod template sits under spec.replicatedJobs[i]: its own labels (which the required
    hostname anti-affinity selects) are read through the list index, so 6 pods on 4 hosts are flagged."""
    by_rule = {f.rule: f for f in lint("jobset-anti-affinity.yaml", scenario).findings}
    assert sorted(by_rule) == ["GPU011"]
    assert by_rule["GPU011"].path.startswith("spec.replicatedJobs[0].template.spec.template.spec.affinity")
    assert "6 replica(s) must each have their own kubernetes.io/hostname domain" in by_rule["GPU011"].message


def test_describe_output_is_refused_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "describe.txt"
    path.write_text(
        "Name:         train-0\nNamespace:    default\nPriority:     0\nLabels:       app=train\n"
    )
    result = CliRunner().invoke(cli.app, ["lint", str(path)])
    assert result.exit_code == 2
    assert "looks like `kubectl describe` output" in result.output


def test_volcano_job_tasks_are_read(scenario: Scenario) -> None:
    report = lint("volcano-fraction.yaml", scenario)
    assert report.pod_templates == 2
    (f,) = report.findings
    assert f.rule == "GPU001" and f.object_ref == "Job/mnist-volcano"
    assert f.path == "spec.tasks[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]"
    assert f.line == 31


def test_appwrapper_trainjob_inferenceservice(scenario: Scenario) -> None:
    report = lint("crd-workloads.yaml", scenario)
    assert report.pod_templates == 3
    found = {(f.object_ref, f.rule, f.path) for f in report.findings}
    assert found == {
        # request 2 != limit 1 inside the wrapped PyTorchJob, named at its path in the AppWrapper
        (
            "AppWrapper/wrapped-pytorch",
            "GPU002",
            "spec.components[0].template.spec.pytorchReplicaSpecs.Master.template.spec.containers[0]"
            ".resources.requests",
        ),
        # 1500m GPUs per Trainer node: not a whole number
        ("TrainJob/llama-finetune", "GPU001", "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]"),
        # a request with no limit on the KServe model container
        ("InferenceService/llama-serve", "GPU003", "spec.predictor.model.resources.limits"),
    }
    lines = {f.object_ref: f.line for f in report.findings}
    assert lines["AppWrapper/wrapped-pytorch"] == 28 and lines["TrainJob/llama-finetune"] == 41


def test_unread_kind_with_gpus_is_a_warning(scenario: Scenario) -> None:
    report = lint("unread-kind.yaml", scenario)
    assert report.pod_templates == 0
    (f,) = report.findings
    assert f.rule == "GPU013" and f.severity == "warning"
    assert "Workflow (argoproj.io/v1alpha1) is not a workload kind fleetlab reads" in f.message
    assert f.path == "spec.templates[0].container.resources.limits[nvidia.com/gpu]"


def test_trainjob_placement_rules_wait_for_its_runtime(scenario: Scenario, tmp_path: Path) -> None:
    """A TrainJob's tolerations and node selection live in its ClusterTrainingRuntime: with a valid
    resourcesPerNode nothing is reported, not a GPU006 for tolerations lint cannot see."""
    path = tmp_path / "trainjob.yaml"
    path.write_text((FIXTURES / "crd-workloads.yaml").read_text().split("---")[1].replace("1500m", "4"))
    report = lint_paths([path], scenario)
    assert report.pod_templates == 1 and report.findings == ()
