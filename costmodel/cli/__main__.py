"""``python -m costmodel.cli``: the same as the ``costmodel`` script."""

import sys

from . import main

sys.exit(main())
