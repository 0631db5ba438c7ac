"""First-party providers; each sub-package depends only on :mod:`spi`."""

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())  # records go nowhere unless configured
