"""``stacklens compare``: runs side by side, the change with its significance, in words.

Stages: :mod:`~stacklens.compare.load` reads run folders, :mod:`~stacklens.compare.model`
computes the comparison (a plain dict), :mod:`~stacklens.compare.render` turns it into terminal
text or a self-contained HTML page. Imports only :mod:`stacklens.store`, ``schema``,
``manifest``, ``vocab`` and ``errors`` below it.
"""

from stacklens.compare.load import RunData, load_run
from stacklens.compare.model import COMPARE_FORMAT_VERSION, compare_runs

__all__ = ["COMPARE_FORMAT_VERSION", "RunData", "compare_runs", "load_run"]
