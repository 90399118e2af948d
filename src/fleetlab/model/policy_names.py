"""The names of placement policies, as plain constants: a scenario is checked against them on load, and the
command line lists them in its help before anything heavier than this module is imported."""

from __future__ import annotations

#: Policy presets (defined in fleetlab.placement.profiles).
PRESET_NAMES: tuple[str, ...] = ("default", "least-allocated", "most-allocated", "bin-packing")
#: The FGD paper's GPU-sharing policies (fleetlab.placement.share_policies) as main-simulator policies.
SHARE_POLICY_NAMES: tuple[str, ...] = ("fgd", "bestfit", "dotprod", "packing", "clustering", "random")
POLICY_NAMES: tuple[str, ...] = PRESET_NAMES + SHARE_POLICY_NAMES
#: The policy that means "the scenario file's own scheduler section".
SCENARIO_POLICY = "scenario"
#: The columns ``compare`` runs when no ``--policy`` is given.
DEFAULT_COMPARE: tuple[str, ...] = ("default", "least-allocated", "most-allocated", "bin-packing")
