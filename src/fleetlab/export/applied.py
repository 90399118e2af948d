"""A model dumped as a team applies it: camelCase fields, no status, no empty defaults."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["as_applied"]


def _pruned(value: Any) -> Any:
    """Without the empty lists and maps the model's defaults add (the API server omits them too)."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in ({}, [], ())}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def as_applied(model: BaseModel) -> dict[str, Any]:
    """The object's manifest: by alias, without ``status``, None fields or empty collections."""
    body: dict[str, Any] = _pruned(
        model.model_dump(by_alias=True, exclude_none=True, exclude={"status"}, mode="json")
    )
    return body
