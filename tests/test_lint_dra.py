"""``fleetlab lint`` on DRA manifests: selectors compiled as the API server compiles them (GPU014) and
requests naming a DeviceClass that does not exist (GPU015)."""

from __future__ import annotations

from pathlib import Path

from fleetlab.lint.check import lint_paths

GOOD = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: big-gpus}
spec:
  selectors:
  - cel: {expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: big-gpus, count: 2}
      - name: mig
        exactly: {deviceClassName: mig.nvidia.com}
"""

BAD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: typo, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.nvidia.comm
        selectors:
        - cel: {expression: "devise.driver == 'gpu.nvidia.com'"}
"""


def test_valid_dra_manifests_have_no_findings(tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    report = lint_paths([path])
    assert report.findings == ()


def test_bad_selector_and_unknown_class_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    by_rule = {f.rule: f for f in lint_paths([path]).findings}
    assert set(by_rule) == {"GPU014", "GPU015"}
    assert by_rule["GPU014"].message == "CEL selector does not compile: undeclared reference to 'devise'"
    assert by_rule["GPU014"].path == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert by_rule["GPU014"].line == 11
    assert "device class gpu.nvidia.comm is not defined" in by_rule["GPU015"].message
