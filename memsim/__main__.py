"""``python -m memsim`` is the ``memsim`` command."""

import sys

from memsim.cli import main

sys.exit(main())
