"""Broker accounting (issue 8): every oslo.messaging message through RabbitMQ during a run,
from the broker's own firehose, plus the management API's counters over time.

Stage tables: ``messages`` and ``broker_samples`` (:mod:`stacklens.schema`). Capture:
:class:`BrokerRecorder` (a :class:`stacklens.recorder.Recorder`); decoding:
:func:`decode_trace` / :func:`decode_body` (pure); log side of the cross-check:
:func:`log_rpc_sends`.
"""

from stacklens.broker.decode import KINDS, decode_body, decode_trace, redact, split_conn_name
from stacklens.broker.logs import crosscheck, log_rpc_sends
from stacklens.broker.mgmt import Management, sample_rows
from stacklens.broker.recorder import BrokerConfig, BrokerRecorder

__all__ = [
    "BrokerConfig",
    "BrokerRecorder",
    "KINDS",
    "Management",
    "crosscheck",
    "decode_body",
    "decode_trace",
    "log_rpc_sends",
    "redact",
    "sample_rows",
    "split_conn_name",
]
