"""Config advice: read a cloud's oslo.config / RabbitMQ / MySQL / haproxy files, apply the
declared scale rules (:data:`RULES`), and link the symptoms a run shows (QueuePool limits, RPC
timeouts, deadlocks, one host taking the builds) to the settings behind them. Output: table
``config_findings`` (:mod:`stacklens.schema`) and ``stacklens config check``.

Stage package: imports only the store, the schema and below (see pyproject's import-linter
contract).
"""

from __future__ import annotations

from stacklens.advise.check import (
    Finding,
    check,
    config_findings,
    findings_frame,
    has_errors,
    run_release,
    write_config_findings,
)
from stacklens.advise.ini import ConfigFile, ConfigSet, classify, load_configs, parse_text
from stacklens.advise.release import parse_release, release_name
from stacklens.advise.rule import Rule, Setting, Verdict
from stacklens.advise.rules import RULES, rule
from stacklens.advise.symptoms import Symptom, symptoms_of_run

__all__ = [
    "ConfigFile",
    "ConfigSet",
    "Finding",
    "RULES",
    "Rule",
    "Setting",
    "Symptom",
    "Verdict",
    "check",
    "classify",
    "config_findings",
    "findings_frame",
    "has_errors",
    "load_configs",
    "parse_release",
    "parse_text",
    "release_name",
    "rule",
    "run_release",
    "symptoms_of_run",
    "write_config_findings",
]
