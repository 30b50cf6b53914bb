"""The run folder: canonical tables as Parquet files and in one DuckDB database.

Layout of ``<run>/``::

    stacklens.duckdb          a view per table below (relative paths), for SQL: ``stacklens sql``
    tables/<name>.parquet     the same tables as Parquet, for Spark, Polars, pandas
    manifest.json             format version, stacklens version, stages run, inputs
    report.json, report.html  written by the report stage

Each stage writes its tables through :class:`RunStore` and the next stage reads them back, so a
stage can be replayed alone from the previous stage's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from stacklens.errors import StoreError
from stacklens.schema import TABLES, conform

__all__ = ["FORMAT_VERSION", "PARQUET_COMPRESSION", "RunStore"]

#: Parquet codec: zstd wrote as fast as lz4 and snappy here (0.7 s for 0.8 M events) at half
#: their size.
PARQUET_COMPRESSION = "zstd"

#: Run-folder format history: 1 (stacklens 0.1) first version.
FORMAT_VERSION = 1


class RunStore:
    """Read and write the canonical tables of one run folder (created on first write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.tables_dir = self.path / "tables"
        self.db_path = self.path / "stacklens.duckdb"

    # manifest ---------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """The run's manifest (empty dict for a new folder). Raises StoreError on a newer format."""
        p = self.path / "manifest.json"
        if not p.exists():
            return {}
        m = json.loads(p.read_text())
        if m.get("format_version", 0) > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer stacklens (format "
                f"{m['format_version']} > {FORMAT_VERSION}); upgrade stacklens"
            )
        return m

    def update_manifest(self, **fields: Any) -> None:
        """Merge ``fields`` into ``manifest.json``."""
        from stacklens import __version__

        m = self.manifest()
        m.update(fields, format_version=FORMAT_VERSION, stacklens_version=__version__)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "manifest.json").write_text(json.dumps(m, indent=2, default=str))

    # tables -----------------------------------------------------------------------------
    def write(self, tables: dict[str, pl.DataFrame]) -> None:
        """Write canonical tables (conformed to :mod:`stacklens.schema`) as Parquet and register
        each as a view in the run's DuckDB database, replacing tables of the same name."""
        self.tables_dir.mkdir(parents=True, exist_ok=True)
        for name, df in tables.items():
            conform(df, name).write_parquet(
                self.tables_dir / f"{name}.parquet", compression=PARQUET_COMPRESSION
            )
        self.connect(read_only=False).close()

    def _register(self, con: duckdb.DuckDBPyConnection) -> None:
        """One view per Parquet file, by a path relative to the run folder (``tables/x.parquet``):
        the database file holds no absolute path, so the folder can be moved or copied. DuckDB
        resolves the relative paths against ``file_search_path`` (set by :meth:`connect`; by hand:
        ``SET file_search_path = '<run>'``, or run ``duckdb`` inside the run folder)."""
        self._search_here(con)
        for pq in sorted(self.tables_dir.glob("*.parquet")):
            rel = f"tables/{pq.name}".replace("'", "''")
            con.execute(
                f'CREATE OR REPLACE VIEW "{pq.stem}" AS SELECT * FROM read_parquet(\'{rel}\')'
            )

    def _search_here(self, con: duckdb.DuckDBPyConnection) -> None:
        folder = str(self.path.resolve()).replace("'", "''")
        con.execute(f"SET file_search_path = '{folder}'")

    def has(self, name: str) -> bool:
        """True when table ``name`` was written."""
        return (self.tables_dir / f"{name}.parquet").exists()

    def read(self, name: str) -> pl.DataFrame:
        """Table ``name`` as a Polars frame. Raises StoreError when the stage has not run."""
        if name not in TABLES:
            raise KeyError(name)
        pq = self.tables_dir / f"{name}.parquet"
        if not pq.exists():
            raise StoreError(
                f"{self.path} has no '{name}' table: run the stage that makes it first "
                f"(stacklens ingest / trace)"
            )
        return pl.read_parquet(pq)

    def connect(self, read_only: bool = True) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection to the run's database, its views pointed at this folder's Parquet
        files (so a run folder can be moved or copied). Raises StoreError before ingest."""
        if not self.tables_dir.exists():
            raise StoreError(f"{self.path} holds no tables: run stacklens ingest first")
        if read_only and self.db_path.exists():
            # never write into a folder opened for reading: use the file's views when they are
            # current, else (a folder from an older stacklens) the same views in memory
            con = duckdb.connect(str(self.db_path), read_only=True)
            self._search_here(con)
            if self._views_current(con):
                return con
            con.close()
            con = duckdb.connect(":memory:")
            self._register(con)
            return con
        with duckdb.connect(str(self.db_path)) as con:
            self._register(con)
        con = duckdb.connect(str(self.db_path), read_only=read_only)
        self._search_here(con)
        return con

    def _views_current(self, con: duckdb.DuckDBPyConnection) -> bool:
        """True when the database has exactly one relative-path view per Parquet table."""
        views = dict(con.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall())
        stems = {pq.stem for pq in self.tables_dir.glob("*.parquet")}
        return set(views) == stems and all(
            f"'tables/{name}.parquet'" in (views[name] or "") for name in stems)
