"""One structure-aware fuzz test per importer of ``fleetlab import``: a small valid input of each format is
mutated where hypothesis chooses (a JSON value replaced by a hostile one of another type, a key dropped, a
cell replaced, the text cut short) and imported through the command line. Every case must end in a
history that loads and passes its checks (exit 0) or one paragraph (exit 2): never a traceback, never a
hang. Derandomised, so every run checks the same cases; ``FLEETLAB_FUZZ_EXAMPLES`` raises the count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.spec.history.store import load_history
from kube_history_builders import kube_list, pod
from test_fuzz_inputs import EXAMPLES, FUZZ, HISTORY, cli_clean, mutated, mutated_text

EXAMPLE_HISTORY = Path(__file__).resolve().parent.parent / "examples" / "history"

PER_IMPORTER = settings(FUZZ, max_examples=max(6, EXAMPLES // 3))

_SACCT_JSON = json.loads((HISTORY / "sacct.json").read_text(encoding="utf-8"))
_SACCT_JSON["jobs"] = _SACCT_JSON["jobs"][:2]
_KUBECTL = kube_list(
    [
        pod("ns", "p-0", "10:00:00", scheduled="10:00:01", started="10:00:02", finished="10:30:00",
            phase="Succeeded", gpus=1),
        pod("ns", "q-0", "10:05:00", phase="Pending", gpus=2),
    ]
)  # fmt: skip
_PHILLY_LOG = json.loads((HISTORY / "philly_log.json").read_text(encoding="utf-8"))[:2]
_OPENCOST = json.loads((EXAMPLE_HISTORY / "opencost-allocation.json").read_text(encoding="utf-8"))
_POLICY = HISTORY / "policy"
#: JSON inputs: (format, document).
DOCS = {"kubectl": _KUBECTL, "slurm-json": _SACCT_JSON, "philly-log": _PHILLY_LOG, "opencost-json": _OPENCOST}
#: Text inputs: (format, text, cell separator).
TEXTS = {
    "slurm": ("\n".join((HISTORY / "sacct.txt").read_text(encoding="utf-8").splitlines()[:5]), "|"),
    "focus": ("\n".join((HISTORY / "focus.csv").read_text(encoding="utf-8").splitlines()[:3]), ","),
    "swf": ((HISTORY / "tiny.swf").read_text(encoding="utf-8"), " "),
    "philly": ("timestamp,duration,num_gpus,cluster\n2017-10-03 08:00:00,600,2,c1\n", ","),
    "gcp-billing": (
        "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,"
        "currency_conversion_rate,cost_type,credits\n"
        "Compute Engine,Nvidia H100 80GB GPU running in Americas,2024-05-01T10:00:00Z,2024-05-01T11:00:00Z,p,"
        'team=a,92.0,EUR,0.92,regular,"[{""name"": ""CUD"", ""amount"": -18.4}]"\n',
        ",",
    ),
    "opencost-csv": (
        "\n".join((EXAMPLE_HISTORY / "opencost-export.csv").read_text(encoding="utf-8").splitlines()[:3]),
        ",",
    ),
    "sacctmgr": ((_POLICY / "assoc.txt").read_text(encoding="utf-8"), "|"),
    "sacctmgr-qos": ((_POLICY / "qos.txt").read_text(encoding="utf-8"), "|"),
    "sshare": ((_POLICY / "sshare.txt").read_text(encoding="utf-8"), "|"),
    "scontrol": ((_POLICY / "config.txt").read_text(encoding="utf-8"), " "),
}
PREFIX = {
    "slurm-json": "slurm",
    "philly-log": "philly",
    "opencost-json": "opencost",
    "opencost-csv": "opencost",
    "sacctmgr-qos": "sacctmgr",
}


def _import(tmp: Path, fmt: str, text: str) -> None:
    source = tmp / "input"
    source.write_text(text, encoding="utf-8")
    result = cli_clean("import", f"{PREFIX.get(fmt, fmt)}:{source}", "--out", str(tmp / "out"))
    assert result.exit_code in (0, 2), result.output[-2000:]
    if result.exit_code == 0:  # a result must be a history folder that loads and passes its checks
        load_history(tmp / "out")
    else:
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@st.composite
def _document(draw: st.DrawFn, fmt: str) -> str:
    text = json.dumps(draw(mutated(DOCS[fmt])))
    return text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 5)) == 0 else text


@pytest.mark.parametrize("fmt", sorted(DOCS))
def test_fuzz_json_importer(tmp_path_factory: Any, fmt: str) -> None:
    @PER_IMPORTER
    @given(text=_document(fmt))
    def case(text: str) -> None:
        _import(tmp_path_factory.mktemp(fmt), fmt, text)

    case()


@pytest.mark.parametrize("fmt", sorted(TEXTS))
def test_fuzz_text_importer(tmp_path_factory: Any, fmt: str) -> None:
    base, sep = TEXTS[fmt]

    @PER_IMPORTER
    @given(text=mutated_text(base, sep))
    def case(text: str) -> None:
        _import(tmp_path_factory.mktemp(fmt), fmt, text)

    case()
