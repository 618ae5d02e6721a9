"""``python -m costmodel``: the same as the ``costmodel`` script (and ``python -m costmodel.cli``)."""

import sys

from .cli import main

sys.exit(main())
