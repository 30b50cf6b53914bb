"""``stacklens compare RUN_A RUN_B [RUN_C...]``: runs side by side, changes and their
significance in words; exit code 3 when a regression beyond ``--threshold`` is significant."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from stacklens.compare import compare_runs, load_run
from stacklens.compare.render import render_html, render_text
from stacklens.errors import RegressionFound, UserError


def compare(
    runs: list[Path] = typer.Argument(..., help="Run folders; the first is the baseline."),
    threshold: float = typer.Option(0.10, "--threshold", envvar="STACKLENS_THRESHOLD",
                                    help="Slowdown (0.1 = 10 %) or relative success-rate fall "
                                    "beyond which a significant change is a regression (exit 3)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level of the tests."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    html_out: Path | None = typer.Option(None, "--html", help="Also write a self-contained "
                                         "HTML page to this file."),
) -> None:
    """Compare runs: p50/p95/p99 per operation and component, success/failure/retry rates and
    throughput side by side, the change with a 95 % interval and its verdict, and what differs
    between the runs."""
    if len(runs) < 2:
        raise UserError("compare needs at least two run folders")
    if threshold < 0 or not 0 < alpha < 1:
        raise UserError("--threshold must be >= 0 and --alpha between 0 and 1")
    data = [load_run(p) for p in runs]
    names = [d.name for d in data]
    if len(set(names)) < len(names):  # same folder names in different places: use paths
        data = [load_run(p, name=str(p)) for p in runs]
    result = compare_runs(data, threshold=threshold, alpha=alpha)
    if html_out is not None:
        html_out.write_text(render_html(result), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(result, indent=1) + "\n")
    else:
        sys.stdout.write(render_text(result, color=sys.stdout.isatty()))
    if result["regressions"]:
        raise RegressionFound(f"{len(result['regressions'])} significant regression(s) beyond "
                              f"the threshold of {threshold:.0%}: {result['regressions'][0]}")
