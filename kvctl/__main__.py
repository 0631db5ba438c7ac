"""``python -m kvctl``.

Python puts the working folder first on ``sys.path`` for ``-m``; a folder of the
user's that holds its own ``spi``, ``providers`` or ``migrations`` package would
then be imported instead of kvctl's, so it is dropped first (as pip's own
``__main__`` does).
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)

from kvctl.cli import main  # after the path fix, on purpose

main()
