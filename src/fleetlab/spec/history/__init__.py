"""Importers that turn a real cluster's records into a :class:`fleetlab.model.history.History`.

One module per source (kubectl JSON, Prometheus, Slurm, FOCUS bills, Philly, SWF); :func:`import_sources`
reads any mix of them and :mod:`.store` writes and reads the folder ``fleetlab import`` produces.
"""

from fleetlab.spec.history.sources import FORMATS, PrometheusSource, detect_format, import_sources
from fleetlab.spec.history.store import load_history, write_history

__all__ = ["FORMATS", "PrometheusSource", "detect_format", "import_sources", "load_history", "write_history"]
