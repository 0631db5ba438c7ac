"""kvctl: the command line, dashboard and Spark tools over the StructuredTable SPI."""

__version__ = "0.1.0"
