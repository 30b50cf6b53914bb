"""stacklens: how much load an OpenStack cloud really takes, where the time goes and why
requests fail, from plain service logs.

Pipeline, one direction: ``ingest -> trace -> analyze -> report`` (``drive``, ``forecast`` and
``sweep`` to come). Stages meet in the canonical tables of :mod:`stacklens.schema`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
