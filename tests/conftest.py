"""Shared fixtures: where the real artefacts live, and one analyzed run of the main fixture.

Real logs are never copied into this repository: they are read from ``<repo>/../shared/data``
(override with ``STACKLENS_DATA``); tests that need them skip with the reason when absent.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(os.environ.get("STACKLENS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
DEVSTACK = DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"


def need(path: Path) -> Path:
    """Skip the calling test when the real artefact ``path`` is not on this machine."""
    if not path.exists():
        pytest.skip(f"real data not present: {path} (set STACKLENS_DATA to the shared/data folder)")
    return path


@pytest.fixture(scope="session")
def devstack_run(tmp_path_factory):
    """The devstack-gate job ingested, traced and analyzed once per session: (store, report)."""
    from stacklens.pipeline import analyze_logs
    from stacklens.store import RunStore

    need(DEVSTACK)
    store = RunStore(tmp_path_factory.mktemp("devstack-run"))
    _, _, report = analyze_logs(store, [str(DEVSTACK)], html=False)
    return store, report


#: The fake compute API, a test double run as a script (see tests/doubles).
FAKE_NOVA = Path(__file__).parent / "doubles" / "fake_nova.py"


@contextlib.contextmanager
def fake_nova(*args: str, env: dict | None = None) -> Iterator[str]:
    """The fake compute API (``tests/doubles/fake_nova.py``) on 127.0.0.1 with ``args`` (e.g.
    ``--build-s 1.0``): yields its endpoint, stops it after."""
    p = subprocess.Popen([sys.executable, str(FAKE_NOVA), "--port", "0", *args],
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline() if p.stdout else ""
        assert line.startswith("port "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/v2.1"
    finally:
        p.terminate()
        p.wait(10)
