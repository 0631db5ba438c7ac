"""kvctl: the command line, dashboard and Spark tools over the StructuredTable SPI."""

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())  # records go nowhere unless configured
