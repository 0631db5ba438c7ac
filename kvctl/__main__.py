"""``python -m kvctl``."""

from kvctl.cli import main

main()
