"""``python -m stacklens``: the same as the ``stacklens`` command."""

from stacklens.cli import main

if __name__ == "__main__":
    main()
