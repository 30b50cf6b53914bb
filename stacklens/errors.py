"""The one exception tree of stacklens.

::

    StacklensError                 base; never raised itself
    ├── UserError                  bad input from the user: exit code 1, one line on stderr
    │   ├── InputNotFound          a path given on the command line does not exist
    │   ├── NoLogsFound            paths exist but hold no file stacklens can read as a log
    │   ├── StoreError             a run folder is missing a stage's tables or is of another version
    │   ├── MapError               a --host-map / --service-map entry cannot be parsed
    │   └── LabError               the local lab cannot start or is missing packages
    └── SlaBreach                  an SLA or regression check failed: exit code 3
        └── RegressionFound        ``stacklens compare``: a significant regression beyond
                                   ``--threshold``

Bad log *lines* are never exceptions: ingest counts them in ``ingest_stats`` and keeps them in
``quarantine``. Exit codes are fixed (see :data:`EXIT_CODES`): 0 ok, 1 user error, 2 usage
(raised by typer/click itself), 3 SLA breach or regression.
"""

from __future__ import annotations

__all__ = [
    "EXIT_CODES",
    "InputNotFound",
    "LabError",
    "MapError",
    "NoLogsFound",
    "RegressionFound",
    "SlaBreach",
    "StacklensError",
    "StoreError",
    "UserError",
]

EXIT_CODES = {"ok": 0, "user_error": 1, "usage": 2, "sla_breach": 3}


class StacklensError(Exception):
    """Base of every error stacklens raises on purpose."""

    exit_code = 1


class UserError(StacklensError):
    """The user's input cannot be used; the message says what to change. Exit code 1."""

    exit_code = 1


class InputNotFound(UserError):
    """A path named on the command line does not exist."""


class NoLogsFound(UserError):
    """The paths exist but none holds a file that stacklens recognises as a service log."""


class StoreError(UserError):
    """A run folder lacks the tables a stage needs (run the earlier stage first)."""


class MapError(UserError):
    """A ``--host-map`` or ``--service-map`` entry is not of the form ``GLOB=NAME``."""


class LabError(UserError):
    """``stacklens lab`` cannot do what was asked: packages or services missing, a service
    that does not come up; the message says what to install or where its log is."""


class SlaBreach(StacklensError):
    """An SLA criterion or a regression check failed. Exit code 3."""

    exit_code = 3


class RegressionFound(SlaBreach):
    """``stacklens compare`` found a significant regression beyond ``--threshold``. Exit code 3,
    as an SLA breach."""
