"""BrokerRecorder against a real RabbitMQ (management plugin on): set
``STACKLENS_TEST_RABBIT_MGMT`` (e.g. ``http://127.0.0.1:29771``) and
``STACKLENS_TEST_RABBIT_AMQP`` (``127.0.0.1:29772``; guest/guest) -- a running ``stacklens lab
up`` provides both (ports base+71 and base+72). Skips without them. Publishes oslo.messaging-
shaped messages itself with pika while recording, so it needs no OpenStack."""

from __future__ import annotations

import json
import os
import time

import pytest

from stacklens.broker import BrokerConfig, BrokerRecorder, Management

MGMT = os.environ.get("STACKLENS_TEST_RABBIT_MGMT")
AMQP = os.environ.get("STACKLENS_TEST_RABBIT_AMQP", "127.0.0.1:5672")


@pytest.mark.skipif(not MGMT, reason="no RabbitMQ: set STACKLENS_TEST_RABBIT_MGMT/_AMQP")
def test_firehose_capture_on_a_real_broker():
    pika = pytest.importorskip("pika")
    host, port = AMQP.rsplit(":", 1)
    rec = BrokerRecorder(BrokerConfig(str(MGMT), amqp_host=host, amqp_port=int(port),
                                      sample_every_s=1))
    mgmt = Management(str(MGMT))
    rec.start()
    try:
        assert mgmt.tracing()
        conn = pika.BlockingConnection(pika.ConnectionParameters(
            host, int(port), credentials=pika.PlainCredentials("guest", "guest")))
        ch = conn.channel()
        ch.exchange_declare("stacklens_test_fanout", "fanout", auto_delete=True)
        qs = [ch.queue_declare("", exclusive=True).method.queue for _ in range(3)]
        for q in qs:
            ch.queue_bind(q, "stacklens_test_fanout")
        msg = {"method": "stacklens_probe", "args": {}, "_unique_id": "f" * 32,
               "_context_request_id": "req-probe", "_context_auth_token": "SECRET"}
        body = json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(msg)})
        for _ in range(5):
            ch.basic_publish("stacklens_test_fanout", "", body)
        for q in qs:  # consume, so that deliveries are traced
            for _ in range(5):
                assert ch.basic_get(q, auto_ack=True)[0] is not None
        conn.close()
        time.sleep(1.5)
    finally:
        tables, notes = rec.stop(timeout_s=30)
    assert not mgmt.tracing()  # switched off again
    m = tables["messages"].filter(tables["messages"]["method"] == "stacklens_probe")
    pub = m.filter(m["direction"] == "publish")
    dlv = m.filter(m["direction"] == "deliver")
    assert pub.height == 5 and dlv.height == 15, notes  # fan-out amplification 3
    assert set(pub["kind"]) == {"fanout"} and set(pub["topic"]) == {"stacklens_test"}
    assert set(pub["request_id"]) == {"req-probe"}
    assert all("SECRET" not in c for c in pub["context"])
    s = tables["broker_samples"]
    assert s.height > 0 and "connections" in set(s["metric"])
    assert not any("dropped" in n for n in notes), notes
