"""Kubernetes scheduling objects as plain data: taints, tolerations, node selectors and affinity.

Field names follow the Kubernetes API (camelCase aliases) so users can paste real pod spec fragments into
a scenario; matching semantics live in ``fleetlab.placement``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fleetlab.model.limits import Int

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class KubeModel(BaseModel):
    """Base for API-shaped objects: frozen, camelCase aliases accepted, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True)


class Taint(KubeModel):
    """A node taint (core/v1 Taint)."""

    key: str = Field(min_length=1)
    value: str = ""
    effect: TaintEffect


#: An integer as the comparison operators read one (core/v1 toleration helpers, v1.35): optional minus, no
#: plus sign, no leading zeros, no "-0", within int64.
_STRICT_INT = re.compile(r"^(0|-?[1-9][0-9]{0,18})$")
_INT64 = (-(2**63), 2**63 - 1)


def strict_int64(text: str) -> int | None:
    """``text`` as an int64 the way ``Lt`` / ``Gt`` tolerations compare it, else None."""
    if not _STRICT_INT.match(text):
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


class Toleration(KubeModel):
    """A pod toleration (core/v1 Toleration); an empty key with Exists tolerates every taint.

    ``Lt`` / ``Gt`` (Kubernetes v1.35, alpha gate TaintTolerationComparisonOperators, KEP-5471) tolerate a
    taint whose value, read as an integer, is below / above the toleration's value."""

    key: str = ""
    operator: Literal["Equal", "Exists", "Lt", "Gt"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: Int | None = Field(default=None, alias="tolerationSeconds")

    @model_validator(mode="after")
    def _check(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("a toleration with operator Exists must not have a value")
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration with an empty key must use operator Exists")
        if self.operator in ("Lt", "Gt") and strict_int64(self.value) is None:
            raise ValueError(
                f"a toleration with operator {self.operator} needs an integer value "
                f"(no plus sign or leading zeros), got {self.value!r}"
            )
        return self


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """core/v1 ToleratesTaint: effect empty or equal, key empty (Exists) or equal, then Exists, equal
    values, or (Lt / Gt) the taint's integer value below / above the toleration's; a taint value that is
    not an integer is never tolerated by Lt / Gt."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator == "Equal":
        return toleration.value == taint.value
    return compare_numeric(toleration.value, taint.value, toleration.operator)


def compare_numeric(toleration_value: str, taint_value: str, operator: str) -> bool:
    """Upstream ``compareNumericValues``: Gt holds when taint > toleration, Lt when taint < toleration;
    either value unparsable (or another operator) is False."""
    mine, theirs = strict_int64(toleration_value), strict_int64(taint_value)
    if mine is None or theirs is None:
        return False
    if operator == "Gt":
        return theirs > mine
    if operator == "Lt":
        return theirs < mine
    return False


def describe_taint(taint: Taint) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as ``kubectl taint`` takes it."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def describe_toleration(toleration: Toleration) -> str:
    """One toleration in a line: ``key=value:Effect`` (Equal), ``key:Effect`` (Exists), ``*`` (every taint),
    ``key>value`` / ``key<value`` (Gt / Lt); the effect is left out when empty."""
    if toleration.operator == "Exists":
        body = toleration.key or "*"
    else:
        sign = {"Equal": "=", "Gt": ">", "Lt": "<"}[toleration.operator]
        body = f"{toleration.key}{sign}{toleration.value}"
    return f"{body}:{toleration.effect}" if toleration.effect else body


def first_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (what Filter reports)."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


class NodeSelectorRequirement(KubeModel):
    """One ``matchExpressions`` entry; Gt/Lt compare the label value as an integer."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> NodeSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise ValueError(f"operator {self.operator} needs exactly one integer value")
            try:
                int(self.values[0])
            except ValueError:
                raise ValueError(
                    f"operator {self.operator} needs an integer value, got {self.values[0]!r}"
                ) from None
        return self


#: A label value as ``validation.IsValidLabelValue`` accepts it: empty, or up to 63 characters of
#: alphanumerics, ``-``, ``_`` and ``.``, beginning and ending with an alphanumeric.
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def selector_values_valid(req: NodeSelectorRequirement) -> bool:
    """Whether upstream's ``labels.NewRequirement`` accepts an In/NotIn requirement's values; the API server
    takes any string, but a term with an invalid one then matches no node (``nodeaffinity`` treats the
    parse error as a non-match)."""
    if req.operator not in ("In", "NotIn"):
        return True
    return all(len(v) <= 63 and LABEL_VALUE.match(v) for v in req.values)


class NodeSelectorTerm(KubeModel):
    """A node selector term: all expressions must match (an empty term matches no node)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = Field(default=(), alias="matchExpressions")
    match_fields: tuple[NodeSelectorRequirement, ...] = Field(default=(), alias="matchFields")

    @model_validator(mode="after")
    def _check(self) -> NodeSelectorTerm:
        for field in self.match_fields:
            if field.key != "metadata.name":
                raise ValueError(f"matchFields supports only metadata.name, got {field.key!r}")
        return self


def requirement_matches(labels: Mapping[str, str], req: NodeSelectorRequirement) -> bool:
    """One ``matchExpressions`` entry against one label set (upstream ``labels.Selector`` semantics; Gt/Lt
    compare integers and fail on a missing or non-integer label; invalid In/NotIn values never match)."""
    if not selector_values_valid(req):
        return False
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    try:
        number = int(value) if value is not None else None
    except ValueError:
        number = None
    if number is None:
        return False
    bound = int(req.values[0])
    return number > bound if req.operator == "Gt" else number < bound


class NodeSelector(KubeModel):
    """Required node affinity: the terms are ORed."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = Field(alias="nodeSelectorTerms", min_length=1)


class PreferredSchedulingTerm(KubeModel):
    """A weighted preferred term; matching nodes get ``weight`` added before normalisation."""

    weight: Int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    """core/v1 NodeAffinity, the two scheduling-time parts."""

    required: NodeSelector | None = Field(
        default=None, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )
    preferred: tuple[PreferredSchedulingTerm, ...] = Field(
        default=(), alias="preferredDuringSchedulingIgnoredDuringExecution"
    )


class Affinity(KubeModel):
    """core/v1 Affinity; only node affinity is modelled so far."""

    node_affinity: NodeAffinity | None = Field(default=None, alias="nodeAffinity")


def check_one_global_default(names: list[str]) -> None:
    """A ValueError when a scenario declares more than one cluster-default PriorityClass: the Priority
    admission plugin refuses to create a second one ("Only one PriorityClass can be marked as
    globalDefault", k8s.io/api scheduling/v1 PriorityClass.globalDefault), so a scenario holding two
    could never be applied."""
    if len(names) > 1:
        raise ValueError(
            f"PriorityClasses {', '.join(sorted(names))} are all globalDefault; at most one may be "
            "(Kubernetes refuses a second)"
        )


class PriorityClass(KubeModel):
    """scheduling.k8s.io/v1 PriorityClass: a named priority value, optionally the cluster default."""

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: Literal["PriorityClass"] | None = None
    metadata: dict[str, object]
    value: Int = Field(ge=-2147483648, le=1000000000)
    global_default: bool = Field(default=False, alias="globalDefault")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = Field(
        default="PreemptLowerPriority", alias="preemptionPolicy"
    )
    description: str = ""

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.metadata.get("name", ""))

    @model_validator(mode="after")
    def _named(self) -> PriorityClass:
        if not self.name:
            raise ValueError("metadata.name is required")
        return self
