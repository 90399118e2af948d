"""Annotated field types that parse Kubernetes quantities and durations as pydantic validates a spec."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from fleetlab.model.limits import MAX_QUANTITY, MAX_SECONDS
from fleetlab.model.quantity import QuantityError, to_int, to_milli, to_whole

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any) -> float:
    """Seconds from a number or a Go-style duration string such as ``1h30m``, ``90s`` or ``2d``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration: use seconds (a number) or a string like '1h30m'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            pos, seconds = 0, 0.0
            for match in _DURATION_PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
                pos = match.end()
            if pos != len(text) or not text:
                raise ValueError(
                    f"{value!r} is not a duration: use seconds (a number) or units ms, s, m, h, d "
                    "as in '1h30m'"
                ) from None
    else:
        raise ValueError(f"{value!r} is not a duration: use seconds (a number) or a string like '1h30m'")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{value!r} must be a finite duration >= 0")
    if seconds > MAX_SECONDS:
        raise ValueError(
            f"{value!r} is longer than {MAX_SECONDS:,} s (100 years), the longest fleetlab models"
        )
    return seconds


def _bounded(value: Any, amount: int) -> int:
    if amount < 0:
        raise QuantityError(f"{value!r} must be greater than or equal to 0")
    if amount > MAX_QUANTITY:
        raise QuantityError(f"{value!r} is larger than {MAX_QUANTITY:,} (2**53), the largest fleetlab models")
    return amount


def _milli(value: Any) -> int:
    return _bounded(value, to_milli(value))


def _bytes(value: Any) -> int:
    return _bounded(value, to_int(value))


def _whole(value: Any) -> int:
    return _bounded(value, to_whole(value, "count"))


#: A Kubernetes resource.Quantity as text (``500m``, ``16Gi``, ``1.5G``, ``1e3``); the validators parse it.
QUANTITY_PATTERN = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkKMGTPE])?\s*$"
#: A duration as text: seconds (``90``) or Go-style units (``1h30m``, ``500ms``, ``2d``).
_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)"
DURATION_PATTERN = rf"^\s*({_NUMBER}([eE][+-]?[0-9]+)?|({_NUMBER}(ms|s|m|h|d))+)\s*$"


def _quantity_schema(kind: str, example: str) -> WithJsonSchema:
    """JSON Schema of a quantity field: a number or quantity text, annotated for editors."""
    return WithJsonSchema(
        {
            "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": QUANTITY_PATTERN}],
            "description": f"{kind}: a number or a Kubernetes quantity such as {example}",
            "x-fleetlab-type": "quantity",
        }
    )


#: CPU quantity (``500m``, ``8``) held as milli-cores.
MilliCpu = Annotated[int, BeforeValidator(_milli), _quantity_schema("CPU", "'8' or '500m'")]
#: Byte quantity (``16Gi``, ``1.5G``) held as bytes.
Bytes = Annotated[int, BeforeValidator(_bytes), _quantity_schema("bytes", "'16Gi' or '1.5G'")]
#: Whole-number quantity (``8``, ``3Ki``).
Whole = Annotated[int, BeforeValidator(_whole), _quantity_schema("a whole count", "'8' or '3Ki'")]
#: Duration in seconds (``90``, ``1h30m``).
Seconds = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema(
        {
            "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": DURATION_PATTERN}],
            "description": "a duration: seconds, or units ms, s, m, h, d as in '1h30m'",
            "x-fleetlab-type": "duration",
        }
    ),
]

#: A duration that must be longer than zero (a job's compute time: a pod never finishes in no time).
PositiveSeconds = Annotated[Seconds, Field(gt=0)]
