"""``python -m memsim`` is the ``memsim`` command."""

import sys

from memsim.command import main

sys.exit(main())
