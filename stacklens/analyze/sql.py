"""One SQL text for DuckDB and Spark SQL: the analyses are written once, in DuckDB's dialect,
and transpiled with sqlglot for Spark.

sqlglot's stock DuckDB-to-Spark mapping turns ``percentile_cont(p) WITHIN GROUP (ORDER BY x)``
into Spark's *approximate* ``percentile_approx``; :func:`for_engine` maps it to Spark's exact
``percentile(x, p)`` instead (both interpolate linearly between closest ranks), so both engines
return the same numbers.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

__all__ = ["ENGINES", "for_engine"]

ENGINES = ("duckdb", "spark")


def _exact_percentile(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        order = node.expression
        col = order.expressions[0].this if isinstance(order, exp.Order) else order
        return exp.Anonymous(this="percentile", expressions=[col.copy(), node.this.this.copy()])
    return node


def for_engine(query: str, engine: str) -> str:
    """``query`` (DuckDB SQL) as ``engine`` runs it. Raises ValueError for an unknown engine."""
    if engine == "duckdb":
        return query
    if engine != "spark":
        raise ValueError(f"unknown SQL engine {engine!r}; known: {', '.join(ENGINES)}")
    tree = sqlglot.parse_one(query, read="duckdb").transform(_exact_percentile)
    return tree.sql(dialect="spark")
