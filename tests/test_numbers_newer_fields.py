"""Fields added with the run-time DRA, admission-check, background-load and recorded-window features take
their numbers through model.limits like every other spec number: true/false, inf and int32 overflow are
refused at load, not read as 1, an endless time or a delay of 10^24 minutes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from fleetlab.model.background import BackgroundLoad
from fleetlab.model.calibration_record import RecordedWindow
from fleetlab.model.dra import ExactDeviceRequest
from fleetlab.model.kueue_extra import AdmissionCheck, RetryStrategy

CHECK = {"metadata": {"name": "prov"}, "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}


@pytest.mark.parametrize(
    ("model", "data", "needle"),
    [
        (BackgroundLoad, {"pool": "p", "share": True}, "true is not a number"),
        (RecordedWindow, {"start_s": True, "state": "down"}, "true is not a number"),
        (RecordedWindow, {"start_s": 0, "end_s": float("inf"), "state": "down"}, "finite"),
        (RetryStrategy, {"backoffLimitCount": True}, "true is not a number"),
        (ExactDeviceRequest, {"deviceClassName": "gpu.nvidia.com", "count": True}, "true is not a number"),
        (
            AdmissionCheck,
            {**CHECK, "spec": {**CHECK["spec"], "retryDelayMinutes": 2**80}},
            "less than or equal to 2147483647",
        ),
    ],
)
def test_nonsense_numbers_are_refused(model: type[BaseModel], data: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValidationError) as refused:
        model.model_validate(data)
    assert needle in str(refused.value)


def test_sane_numbers_still_load() -> None:
    assert BackgroundLoad.model_validate({"pool": "p", "share": 0.5}).share == 0.5
    assert RecordedWindow.model_validate({"start_s": 5, "end_s": 9, "state": "drain"}).end_s == 9.0
    assert RetryStrategy.model_validate({"backoffLimitCount": 2}).backoff_limit_count == 2
    assert ExactDeviceRequest.model_validate({"deviceClassName": "gpu.nvidia.com", "count": 3}).count == 3
    assert AdmissionCheck.model_validate(CHECK).spec.retry_delay_minutes is None
