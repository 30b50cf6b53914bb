"""The types of the canonical table schemas (:mod:`stacklens.schema`)."""

from __future__ import annotations

from typing import TypeAlias

import polars as pl
from polars.datatypes import DataTypeClass

__all__ = ["Columns", "Dtype"]

#: A column's dtype as the tables below write it: a Polars dtype class (``pl.Int64``, what
#: these dicts hold) or a dtype instance (``pl.Datetime("ns")``). Both are accepted wherever
#: Polars takes a schema.
Dtype: TypeAlias = pl.DataType | DataTypeClass

#: A table's columns in order: name -> :data:`Dtype`.
Columns: TypeAlias = dict[str, Dtype]
