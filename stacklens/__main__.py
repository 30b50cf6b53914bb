"""``python -m stacklens``: the same as the ``stacklens`` command."""

from stacklens.cli import main

main()
