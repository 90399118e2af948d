"""Node labels indexed for selectors: per label key, an integer code per node, so a nodeSelector, a node
affinity term or a topology key evaluates as one array operation over all nodes."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class LabelIndex:
    """Per label key, an integer code per node (-1 when absent), so selectors evaluate as array ops."""

    def __init__(self, labels: Sequence[dict[str, str]]) -> None:
        self._n = len(labels)
        self._codes: dict[str, IntArray] = {}
        self._values: dict[str, dict[str, int]] = {}
        self._numeric: dict[str, NDArray[np.float64]] = {}
        keys = sorted({k for node in labels for k in node})
        for key in keys:
            values: dict[str, int] = {}
            codes = np.full(self._n, -1, dtype=np.int64)
            for i, node in enumerate(labels):
                value = node.get(key)
                if value is not None:
                    codes[i] = values.setdefault(value, len(values))
            self._codes[key] = codes
            self._values[key] = values

    def codes(self, key: str) -> IntArray:
        """Per node, an integer code of the label's value (-1 where absent)."""
        codes = self._codes.get(key)
        return np.full(self._n, -1, dtype=np.int64) if codes is None else codes

    def has(self, key: str) -> BoolArray:
        """Nodes carrying label ``key``."""
        codes = self._codes.get(key)
        return np.zeros(self._n, dtype=bool) if codes is None else codes >= 0

    def equals_any(self, key: str, values: Sequence[str]) -> BoolArray:
        """Nodes whose label ``key`` is one of ``values``."""
        codes = self._codes.get(key)
        if codes is None:
            return np.zeros(self._n, dtype=bool)
        table = self._values[key]
        wanted = [table[v] for v in values if v in table]
        if not wanted:
            return np.zeros(self._n, dtype=bool)
        return np.isin(codes, np.asarray(wanted, dtype=np.int64))

    def as_int(self, key: str) -> NDArray[np.float64]:
        """The label parsed as an integer (NaN when absent or not an integer), for Gt/Lt."""
        cached = self._numeric.get(key)
        if cached is not None:
            return cached
        out = np.full(self._n, np.nan)
        codes = self._codes.get(key)
        if codes is not None:
            lookup = np.full(len(self._values[key]), np.nan)
            for value, code in self._values[key].items():
                with contextlib.suppress(ValueError):
                    lookup[code] = float(int(value))
            present = codes >= 0
            out[present] = lookup[codes[present]]
        self._numeric[key] = out
        return out
