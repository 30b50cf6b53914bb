"""Test doubles, kept out of the product package: ``fake_nova`` (a fake compute API with its own
state machine, for the driver tests, the CLI tests and ``bench/drive_bench.py``).

Run one as a server with ``python tests/doubles/fake_nova.py --port 0`` (the file runs as a
script: it imports nothing from the tests).
"""
