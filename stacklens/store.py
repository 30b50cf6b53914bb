"""The run folder: canonical tables as Parquet files and in one DuckDB database.

Layout of ``<run>/``::

    stacklens.duckdb          a view per table below (relative paths), for SQL: ``stacklens sql``
    tables/<name>.parquet     the same tables as Parquet, for Spark, Polars, pandas
    manifest.json             typed sections per writer (:mod:`stacklens.manifest`)
    report.json, report.html  written by the report stage

Each stage writes its tables through :class:`RunStore` and the next stage reads them back, so a
stage can be replayed alone from the previous stage's output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl
from pydantic import BaseModel

from stacklens.errors import StoreError, UserError
from stacklens.manifest import MANIFEST_FORMAT_VERSION, SECTIONS, Manifest, upgrade
from stacklens.schema import TABLES, conform

if TYPE_CHECKING:
    import pyarrow.parquet as papq

__all__ = [
    "FORMAT_VERSION",
    "PARQUET_COMPRESSION",
    "RUN_FILES",
    "RunStore",
    "TableWriter",
]

#: What stacklens writes in a run folder (removed by ``--force``; nothing else is touched).
RUN_FILES = ("tables", "stacklens.duckdb", "stacklens.duckdb.wal", "manifest.json",
             "manifest.json.tmp", "report.json", "report.html", "requests.jsonl",
             "scenario.yaml", "logs")

#: Parquet codec: zstd wrote as fast as lz4 and snappy here (0.7 s for 0.8 M events) at half
#: their size.
PARQUET_COMPRESSION: Final = "zstd"

#: Columns written without Parquet dictionary encoding (values mostly distinct: the dictionary
#: is built and then dropped, a quarter of the events' write time) and, for the long texts,
#: without min/max statistics (no query filters on them). Encodings only: the values read back
#: are the same.
_PLAIN_COLUMNS: Final = {
    "events": ("ts_ns", "line_no", "message", "continuation", "request_id", "http_dur_s"),
}
#: columns written without min/max statistics: long texts, and ids and names whose row
#: groups' min/max never exclude one (random ids, every level in every group); computing them
#: cost 0.5 s CPU per 3.5 M records. Times, numbers, hosts, services and files keep theirs.
_NO_STATS_COLUMNS: Final = {"events": (
    "message", "continuation", "request_id", "global_request_id", "user", "project",
    "instance_uuid", "logger", "level", "http_method", "http_path", "took_what", "rpc_kind",
    "rpc_id", "rpc_topic", "lock_name")}

#: Run-folder format: the manifest's (history in :mod:`stacklens.manifest`; tables unchanged).
FORMAT_VERSION = MANIFEST_FORMAT_VERSION


class RunStore:
    """Read and write the canonical tables of one run folder (created on first write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.tables_dir = self.path / "tables"
        self.db_path = self.path / "stacklens.duckdb"

    # manifest ---------------------------------------------------------------------------
    def read_manifest(self) -> Manifest:
        """The run's typed manifest (an empty one for a new folder), upgraded from any older
        format. Raises :class:`~stacklens.errors.StoreError` on a newer format or bad JSON."""
        p = self.path / "manifest.json"
        if not p.exists():
            return Manifest()
        try:
            doc = json.loads(p.read_text())
        except ValueError as e:
            raise StoreError(f"{p} is not valid JSON: {e}") from None
        return upgrade(doc, str(p))

    def manifest(self) -> dict[str, Any]:
        """The manifest as a plain dict (JSON types; empty dict for a new folder)."""
        if not (self.path / "manifest.json").exists():
            return {}
        return self.read_manifest().model_dump(mode="json", exclude_none=True)

    def write_section(self, name: str, value: BaseModel | dict[str, Any],
                      inputs: list[str] | None = None) -> None:
        """Replace the manifest section ``name`` (one of :data:`~stacklens.manifest.SECTIONS`)
        and, for the ingest section's writer, the top-level ``inputs``. Other sections are kept;
        ``stages`` is derived from the sections present. Raises ``KeyError`` for an unknown
        section name."""
        from stacklens import __version__

        if name not in SECTIONS:
            raise KeyError(name)
        m = self.read_manifest()
        update: dict[str, Any] = {name: value, "stacklens_version": __version__}
        if inputs is not None:
            update["inputs"] = list(inputs)
        m = Manifest.model_validate({**m.model_dump(), **{
            k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in update.items()}})
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / "manifest.json.tmp"
        tmp.write_text(m.with_stages().model_dump_json(indent=2, exclude_none=True))
        tmp.replace(self.path / "manifest.json")

    # run folder -------------------------------------------------------------------------
    def prepare(self, force: bool) -> None:
        """Make the folder ready for a new run: refuse a non-empty folder unless ``force``;
        with ``force`` remove what stacklens writes there (:data:`RUN_FILES`), nothing else.
        Raises :class:`~stacklens.errors.UserError`."""
        out = self.path
        if not out.exists():
            return
        if not out.is_dir():
            raise UserError(f"--out {out} exists and is not a folder")
        if not any(out.iterdir()):
            return
        if not force:
            raise UserError(f"--out {out} is not empty: choose a new folder or pass --force to "
                            "replace the run in it")
        for name in RUN_FILES:
            p = out / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()

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

    def writer(self, name: str) -> TableWriter:
        """A :class:`TableWriter` for table ``name`` (streaming: row groups as they come).
        Raises ``KeyError`` for an unknown table."""
        if name not in TABLES:
            raise KeyError(name)
        self.tables_dir.mkdir(parents=True, exist_ok=True)
        return TableWriter(self, name)

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

    def read(self, name: str, columns: list[str] | None = None) -> pl.DataFrame:
        """Table ``name`` as a Polars frame (only ``columns``, in that order, when given: the
        others are not read). Raises StoreError when the stage has not run."""
        return pl.read_parquet(self.parquet_path(name), columns=columns)

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name`` as a Polars lazy frame over its Parquet file: filters and column
        selections are pushed into the read, so a query touches only the rows and columns it
        needs (memory bounded by what it keeps). Raises StoreError when the stage has not
        run, KeyError for an unknown table."""
        return pl.scan_parquet(self.parquet_path(name))

    def parquet_path(self, name: str) -> Path:
        """The Parquet file of table ``name``. Raises KeyError for an unknown table,
        StoreError when the stage that writes it has not run."""
        if name not in TABLES:
            raise KeyError(name)
        pq = self.tables_dir / f"{name}.parquet"
        if not pq.exists():
            raise StoreError(
                f"{self.path} has no '{name}' table: run the stage that makes it first "
                f"(stacklens ingest / trace)"
            )
        return pq

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


class TableWriter:
    """One canonical table written as Parquet row groups, a frame at a time (memory: one frame).

    ``write(df)`` conforms ``df`` to the table's schema (:func:`~stacklens.schema.conform`) and
    appends it as one or more row groups (pyarrow, Arrow string views: no copy of the strings);
    ``close()`` moves the file into place (``tables/<name>.parquet``; until then the table's
    previous file, if any, stays) and registers the view. Reading it back gives the same frame
    as :meth:`RunStore.write` of all the frames concatenated. A context manager: leaving the
    block by an exception removes the partial file and keeps the previous table."""

    def __init__(self, store: RunStore, name: str):
        self.store, self.name = store, name
        self.rows = 0
        self._part = store.tables_dir / f".{name}.parquet.part"
        self._w: papq.ParquetWriter | None = None

    def write(self, df: pl.DataFrame) -> None:
        """Append the rows of ``df`` (conformed to the table's schema)."""
        at = conform(df, self.name).to_arrow(compat_level=pl.CompatLevel.newest())
        if self._w is None:
            import pyarrow.parquet as papq  # here: its import costs ~0.2 s of every CLI start

            plain = _PLAIN_COLUMNS.get(self.name, ())
            no_stats = _NO_STATS_COLUMNS.get(self.name, ())
            self._w = papq.ParquetWriter(
                self._part, at.schema, compression=PARQUET_COMPRESSION,
                use_dictionary=[c for c in at.schema.names if c not in plain],
                write_statistics=[c for c in at.schema.names if c not in no_stats],
            )
        self._w.write_table(at)
        self.rows += df.height

    def close(self) -> None:
        """Finish the file (an empty table when nothing was written) and register it."""
        if self._w is None:
            self.write(pl.DataFrame(schema=TABLES[self.name]))
        assert self._w is not None
        self._w.close()
        import pyarrow as pa

        # Arrow's allocator keeps what the writer's batches freed (hundreds of MB after an
        # ingest); give it back so the next stage of the same process can have it
        pa.default_memory_pool().release_unused()
        self._part.replace(self.store.tables_dir / f"{self.name}.parquet")
        self.store.connect(read_only=False).close()

    def abort(self) -> None:
        """Drop what was written (the partial file)."""
        if self._w is not None:
            self._w.close()
        self._part.unlink(missing_ok=True)

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
