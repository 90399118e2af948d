"""How many seeds a calibration replays, as plain constants: the command line's help shows them without
importing the replay."""

from __future__ import annotations

#: Seeds the calibrated scenario is replayed under by default (HPC2N: about 2 CPU s a replay).
DEFAULT_SEEDS = 5
#: The most seeds ``--seeds`` accepts.
MAX_SEEDS = 100
