"""Synthetic oslo.log records in the exact shape each release writes them (test helper).

Sources (oslo.log, github.com/openstack/oslo.log):

* ``oslo_log/_options.py``: ``logging_context_format_string`` /
  ``logging_default_format_string`` (``%(asctime)s.%(msecs)03d %(process)d %(levelname)s
  %(name)s [%(request_id)s %(user_identity)s] %(instance)s%(message)s``; Pike on adds
  ``%(global_request_id)s`` first) and ``logging_exception_prefix``: ``%(asctime)s.%(msecs)03d
  %(process)d TRACE %(name)s %(instance)s`` up to oslo.log 1.1 (Juno and older, incubator
  ``openstack/common/log.py``), ``... ERROR %(name)s %(instance)s`` from oslo.log 1.2.0 (Kilo,
  commit 27f7fe5 "Change misleading TRACE to ERROR").
* ``oslo_log/formatters.py`` ``ContextFormatter.formatException``: ``traceback.print_exception``
  output split on ``"\\n"`` (so the last element is ``""``), each element prefixed with the
  exception prefix rendered once per record (one asctime for all lines); ``logging.Formatter
  .format`` appends ``"\\n" + exc_text`` to the formatted message.
"""

from __future__ import annotations

import traceback


def _exc_lines(kind: str) -> list[str]:
    """``traceback.print_exception`` output split on newlines, as formatException does."""
    try:
        try:
            raise KeyError("port-1")
        except KeyError as e:
            if kind == "chain":
                raise RuntimeError("MessagingTimeout: Timed out waiting for a reply") from e
            raise RuntimeError("Timed out waiting for a reply to message ID 8a3") from None
    except RuntimeError as err:
        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return text.split("\n")


def record(
    ts: str,
    pid: int,
    level: str,
    logger: str,
    message: str,
    *,
    ctx: str = "-",
    instance: str = "",
    exc: str | None = None,
    prefix: str = "modern",
) -> list[str]:
    """One record as oslo.log writes it: lines without trailing newline.

    ``ts``: ``YYYY-MM-DD HH:MM:SS.mmm``. ``exc``: None, ``"plain"`` or ``"chain"`` (exception
    chained with ``raise ... from``). ``prefix``: ``"modern"`` (``ERROR`` exception prefix),
    ``"trace"`` (Juno and older ``TRACE``), ``"ctx"`` (a deployment prefix with the request
    context, as the issue quotes: ``... ERROR <logger> [<ctx>] <line>``)."""
    inst = f"[instance: {instance}] " if instance else ""
    lines = [f"{ts} {pid} {level} {logger} [{ctx}] {inst}{message}"]
    if exc:
        tag = "TRACE" if prefix == "trace" else "ERROR"
        pre = f"{ts} {pid} {tag} {logger} "
        if prefix == "ctx":
            pre += f"[{ctx}] "
        pre += inst
        lines += [pre + ln for ln in _exc_lines(exc)]
    return lines


def devstack_journal(host: str, prog: str, pid: int, level: str, logger: str, message: str,
                     *, ctx: str, exc: str | None = None, usec: int = 0) -> list[str]:
    """Devstack under systemd (``lib/...`` ``setup_systemd_logging``): journald ``short-precise``
    lines; ``logging_context_format_string`` ``%(levelname)s %(name)s [%(global_request_id)s
    %(request_id)s ...] %(instance)s%(message)s`` and ``logging_exception_prefix`` ``ERROR
    %(name)s %(instance)s``; each stdout line is its own journal entry (own microseconds)."""
    out = [f"Jan 25 09:29:50.{usec:06d} {host} {prog}[{pid}]: {level} {logger} [{ctx}] {message}"]
    for i, ln in enumerate(_exc_lines(exc) if exc else []):
        out.append(f"Jan 25 09:29:50.{usec + i + 1:06d} {host} {prog}[{pid}]: ERROR {logger} {ln}")
    return out
