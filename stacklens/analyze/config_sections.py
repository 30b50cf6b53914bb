"""Report section on config advice: the ``config_findings`` table (:mod:`stacklens.schema`,
written by :func:`stacklens.advise.write_config_findings`), errors first. When the run has no such
table the report holds ``config_findings: null`` and renderers draw nothing.
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["CONFIG_SECTIONS"]

CONFIG_FINDINGS = Section(
    "config_findings", "Config advice",
    "Settings the scale rules flag, each with its evidence, and the run's symptoms linked to "
    "them (QueuePool limits, RPC timeouts, deadlocks, one host taking most builds).",
    """
        SELECT severity, rule_id, service, file, section, "option", "value", "default",
               symptom, symptom_count, advice, evidence
        FROM config_findings
        ORDER BY CASE severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
                 symptom_count DESC NULLS LAST, rule_id, service, section, "option"
    """,
    (
        Column("severity", "name", "error | warning | info"),
        Column("rule_id", "id", "the rule (stacklens.advise.rules)", "rule"),
        Column("service", "name", "service(s) concerned"),
        Column("file", "name", "config file that sets it, else where it would be set"),
        Column("section", "name", "config section"),
        Column("option", "name", "option name"),
        Column("value", "text", "value in effect; empty: the default applies"),
        Column("default", "text", "default in the cloud's release"),
        Column("symptom", "text", "what the run showed, if anything"),
        Column("symptom_count", "count", "log records of the symptom", "records"),
        Column("advice", "text", "what to change and why"),
        Column("evidence", "text", "sources of the advice and of the default"),
    ),
    needs=("config_findings",),
    absent={"config_findings": None},
)

#: The config sections, in report order.
CONFIG_SECTIONS = (CONFIG_FINDINGS,)
