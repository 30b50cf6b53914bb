"""One plain install gives the native tokenizer: ``pip install .`` (maturin, ``pyproject.toml``)
builds ``native/`` into the same wheel as ``stacklens`` and ``stacklens_lab``, and ingest says in
its summary line and in the manifest (``ingest.native``) whether the native tokenizer ran.

The wheel itself is built only under ``STACKLENS_REQUIRE_NATIVE=1`` (CI; about 40 s of cargo on
2 cores from a clean clone, a few seconds when ``native/target`` is warm)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from stacklens.ingest.tokenize import native_available

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MATURIN = PYPROJECT["tool"]["maturin"]
LINE = ("2016-03-01 10:00:00.123 1234 INFO nova.api.openstack.wsgi "
        "[req-c354514b-0c97-415e-ba7f-18750569f103 admin admin] GET /v2.1/servers\n")


def _packages() -> list[str]:
    """The repository's top-level Python packages (folders with an ``__init__.py``)."""
    return sorted(p.parent.name for p in ROOT.glob("*/__init__.py")
                  if p.parent.name not in ("tests", "bench", "examples"))


def test_one_wheel_holds_every_package_and_the_extension() -> None:
    cargo = tomllib.loads((ROOT / MATURIN["manifest-path"]).read_text())
    assert PYPROJECT["build-system"]["build-backend"] == "maturin"
    assert MATURIN["module-name"] == cargo["lib"]["name"] == "stacklens_native"
    assert sorted(MATURIN["python-packages"]) == _packages()
    assert MATURIN["profile"] == "release"  # editable installs too: the tokenizer is the hot loop
    assert MATURIN["locked"] is True


def _ingest(tmp_path: Path, **env: str) -> tuple[str, dict[str, object]]:
    log = tmp_path / "nova-api.log"
    log.write_text(LINE)
    out = tmp_path / f"run{len(env)}"
    r = subprocess.run([sys.executable, "-m", "stacklens", "ingest", str(log), "--out", str(out)],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "STACKLENS_NATIVE": "1", **env})
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    return r.stderr, manifest["ingest"]


def test_ingest_says_whether_the_native_tokenizer_ran(tmp_path: Path) -> None:
    err, section = _ingest(tmp_path)
    want = native_available()
    assert section["native"] is want
    assert f"native: {str(want).lower()}" in err
    err, section = _ingest(tmp_path, STACKLENS_NATIVE="0")
    assert section["native"] is False
    assert "native: false" in err
    assert section["records"] == 1


def _tracked(*dirs: str) -> list[str]:
    """Files git tracks under ``dirs`` (a clean clone's content); empty outside a git clone."""
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", *dirs], capture_output=True,
                       text=True, timeout=60)
    return sorted(r.stdout.split()) if r.returncode == 0 else []


@pytest.mark.skipif(
    os.environ.get("STACKLENS_REQUIRE_NATIVE") != "1",
    reason="builds a wheel with cargo (~40 s); CI runs it (STACKLENS_REQUIRE_NATIVE=1)",
)
def test_wheel_ships_packages_data_and_the_native_module(tmp_path: Path) -> None:
    assert shutil.which("cargo"), "cargo is needed to build the wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = tmp_path.glob("stacklens-*.whl")
    assert "-abi3-" in wheel.name  # one wheel per platform for every CPython >= 3.11
    names = zipfile.ZipFile(wheel).namelist()
    ours = sorted(n for n in names if n.split("/")[0] in _packages())
    tracked = _tracked(*_packages())
    if tracked:  # exactly the tracked files: data files ship, no __pycache__ or stray files
        assert ours == tracked
    assert "stacklens/forecast/data/lab-2025.1.json" in names
    assert any(n.startswith("stacklens_native/stacklens_native.") and n.endswith((".so", ".pyd"))
               for n in names)
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)


@pytest.mark.skipif(
    os.environ.get("STACKLENS_REQUIRE_NATIVE") != "1",
    reason="compiles the native crate's tests with cargo (~1-2 min); CI runs it "
           "(STACKLENS_REQUIRE_NATIVE=1)",
)
def test_native_crate_unit_tests_pass(tmp_path: Path) -> None:
    """The Rust unit tests of ``native/`` (the redaction's equivalence proofs by example, the
    Utf8View export), built in a scratch target folder so the checkout is left as it was."""
    assert shutil.which("cargo"), "cargo is needed for the native crate's tests"
    r = subprocess.run(
        ["cargo", "test", "--release", "--quiet", "--manifest-path",
         str(ROOT / MATURIN["manifest-path"])],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")},
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "test result: ok" in r.stdout
