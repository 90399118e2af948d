"""GPU012: KAI scheduler's GPU-sharing annotations (``gpu-fraction`` in (0, 1], ``gpu-memory`` in whole
MiB, one of them, no ``nvidia.com/gpu`` request beside them), reported at the annotation's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetlab.lint.check import lint_paths

POD = """apiVersion: v1
kind: Pod
metadata:
  name: share
  annotations:
{annotations}
spec:
  schedulerName: kai-scheduler
  containers:
  - name: main
    image: busybox
    resources:
      limits: {limits}
"""


def _lint(tmp_path: Path, annotations: str, limits: str = "{cpu: '1'}") -> list[tuple[str, int | None, str]]:
    path = tmp_path / "pod.yaml"
    path.write_text(POD.format(annotations=annotations, limits=limits))
    return [(f.rule, f.line, f.message) for f in lint_paths([path]).findings]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ('    gpu-fraction: "1.5"', "0 < f <= 1"),
        ('    gpu-fraction: "0"', "0 < f <= 1"),
        ('    gpu-fraction: "half"', "0 < f <= 1"),
        ('    gpu-memory: "20Gi"', "whole number of MiB"),
        ('    gpu-memory: "-5"', "whole number of MiB"),
        ('    gpu-fraction: "0.5"\n    gpu-memory: "2000"', "not both"),
    ],
)
def test_bad_kai_values_are_errors_at_the_annotation(tmp_path: Path, annotations: str, message: str) -> None:
    ((rule, line, text),) = _lint(tmp_path, annotations)
    assert rule == "GPU012" and message in text
    assert line is not None and 5 <= line <= 7


def test_good_kai_values_pass_and_a_gpu_request_beside_them_does_not(tmp_path: Path) -> None:
    assert _lint(tmp_path, '    gpu-fraction: "0.25"') == []
    assert _lint(tmp_path, '    gpu-memory: "20000"') == []
    ((rule, _, text),) = _lint(tmp_path, '    gpu-fraction: "0.5"', "{nvidia.com/gpu: 1}")
    assert rule == "GPU012" and "also requests nvidia.com/gpu" in text


def test_deployment_templates_are_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: d}}\n  template:\n"
        '    metadata: {labels: {app: d}, annotations: {gpu-fraction: "2"}}\n'
        "    spec: {containers: [{name: c, image: busybox}]}\n"
    )
    (found,) = lint_paths([path]).findings
    assert found.rule == "GPU012" and found.path == "spec.template.metadata.annotations[gpu-fraction]"
