"""``python -m chimbuko_mpi FILE [--worst N]``: the ``chimbuko-prov`` summary."""
import sys

from .cli import main

sys.exit(main())
