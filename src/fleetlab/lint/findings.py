"""What lint reports: one finding per mistake, with its rule, place, message and fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fleetlab.lint.manifests import FieldPath, Manifest, render_path

Severity = Literal["error", "warning"]

#: Rule id -> (severity, one-line title). Errors are what the API server, kube-scheduler or Kueue would
#: refuse or never satisfy; warnings are legal but almost always a mistake.
RULES: dict[str, tuple[Severity, str]] = {
    "GPU000": ("error", "a resource quantity that does not parse"),
    "GPU001": ("error", "an extended resource (GPU) quantity that is not a whole number"),
    "GPU002": ("error", "a GPU request that differs from its limit"),
    "GPU003": ("error", "a GPU request without a limit"),
    "GPU004": ("warning", "GPUs requested by an init container"),
    "GPU005": ("error", "a MIG resource that the declared GPU model does not have"),
    "GPU006": ("error", "no toleration for the GPU nodes' taint"),
    "GPU007": ("error", "a nodeSelector or required node affinity no node pool satisfies"),
    "GPU008": ("error", "a gang that can never fit in one domain of its required topology"),
    "GPU009": ("error", "more of a GPU resource per pod than any node offers"),
    "GPU010": ("error", "a DoNotSchedule topology spread constraint on a label no usable node carries"),
    "GPU011": ("error", "more replicas than domains for their required pod anti-affinity"),
    "GPU012": ("error", "a KAI gpu-fraction / gpu-memory annotation with a bad value"),
    "GPU013": ("warning", "GPU requests in a kind lint does not read (not checked)"),
    "GPU014": ("error", "a DRA object the API server refuses (schema or CEL selector)"),
    "GPU015": ("error", "a DRA request naming a DeviceClass that does not exist"),
}


@dataclass(frozen=True)
class Finding:
    """One problem in one object: ``path`` is inside the object, as the API server names fields."""

    rule: str
    file: str
    document: int
    object_ref: str
    path: str
    line: int | None
    message: str
    fix: str

    @property
    def severity(self) -> Severity:
        """The rule's severity."""
        return RULES[self.rule][0]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "document": self.document,
            "object": self.object_ref,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "fix": self.fix,
        }


def finding(rule: str, manifest: Manifest, path: FieldPath, message: str, fix: str) -> Finding:
    """A finding at ``path`` of ``manifest`` (the line is looked up in the YAML)."""
    assert rule in RULES, rule
    return Finding(
        rule=rule,
        file=manifest.file,
        document=manifest.document + 1,
        object_ref=f"{manifest.kind or '<no kind>'}/{manifest.name}",
        path=render_path(path),
        line=manifest.line(path),
        message=message,
        fix=fix,
    )
