"""``stacklens import``: traces and load results made by other tools, as run folders.

* :mod:`~stacklens.imports.osprofiler`: OSProfiler traces -> ``spans``, ``flows``, ``traces``,
  ``breakdown``;
* :mod:`~stacklens.imports.rally`: a Rally task -> ``requests`` and the manifest's ``run``.

Both return tables; the CLI (``stacklens.cli.import_cmd``) writes them with
:class:`stacklens.store.RunStore`. Imports :mod:`stacklens.store`, ``schema``, ``vocab``,
``errors`` and, for Rally, the reader in :mod:`stacklens.drive.rally`.
"""

from stacklens.imports.osprofiler import OsprofilerImport, import_osprofiler, parse_osprofiler
from stacklens.imports.rally import import_rally, run_section

__all__ = ["OsprofilerImport", "import_osprofiler", "import_rally", "parse_osprofiler",
           "run_section"]
