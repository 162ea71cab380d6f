"""``python -m icetide.cli`` runs the ``icetide`` command."""

from icetide.cli.main import main

main()
