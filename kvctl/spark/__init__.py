"""Spark export and import: the ``kvctl`` PySpark data source and the functions
behind ``kvctl export`` / ``kvctl import``.

Importing this package is cheap; pyspark and pyarrow are imported by its modules
(``session``, ``types``, ``datasource``, ``transfer``), never by ``kvctl.cli`` at
start-up, so ``kvctl get`` does not load Spark.
"""
