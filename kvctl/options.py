"""Options shared by several commands, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from kvctl.completion import complete_column, complete_column_list, complete_key_word, complete_table
from kvctl.output import OutputFormat
from spi.spec import validate_name

Output = Annotated[
    OutputFormat | None,
    typer.Option("--output", "-o", help="Output format (default: table on a terminal, else ndjson)."),
]


def table_name(name: str) -> str:
    """A table name as the SPI accepts it, checked while the command line is parsed:
    an invalid name is bad input (``SchemaError``, exit 2), never "not found"."""
    return validate_name(name, "table")


Table = Annotated[
    str,
    typer.Argument(help="Table name.", callback=table_name, autocompletion=complete_table, show_default=False),
]
Key = Annotated[
    list[str],
    typer.Argument(help="The full primary key as col=value words.", autocompletion=complete_key_word),
]
Prefix = Annotated[
    list[str] | None,
    typer.Option(
        "--prefix", help="Key prefix word col=value (repeat for more key columns).", autocompletion=complete_key_word
    ),
]
Ge = Annotated[
    list[str] | None, typer.Option("--ge", help="Start at keys >= this prefix.", autocompletion=complete_key_word)
]
Gt = Annotated[
    list[str] | None, typer.Option("--gt", help="Start at keys > this prefix.", autocompletion=complete_key_word)
]
Le = Annotated[
    list[str] | None, typer.Option("--le", help="End at keys <= this prefix.", autocompletion=complete_key_word)
]
Lt = Annotated[
    list[str] | None, typer.Option("--lt", help="End before keys < this prefix.", autocompletion=complete_key_word)
]
Where = Annotated[
    str | None,
    typer.Option("--where", help="Filter, e.g. \"status = 'open' and total >= 100\"."),
]
Columns = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="Comma list of columns to print (key columns always come too).",
        autocompletion=complete_column_list,
    ),
]
Column = Annotated[str, typer.Option("--column", help="The column.", autocompletion=complete_column)]
GroupBy = Annotated[
    str | None,
    typer.Option(
        "--group-by",
        help="Comma list of columns: one result per group of their values.",
        autocompletion=complete_column_list,
    ),
]
IfVersion = Annotated[int | None, typer.Option("--if-version", help="Only if the row is at this version.")]
Yes = Annotated[bool, typer.Option("--yes", help="Confirm a destructive command.")]
Ttl = Annotated[
    str | None,
    typer.Option("--ttl", help="Rows written expire this long after the write: 90s, 15m, 2h, 7d.", show_default=False),
]
Null = Annotated[
    str | None,
    typer.Option("--null", help="CSV/TSV: read this text as null in any column (e.g. NA).", show_default=False),
]
Delimiter = Annotated[
    str | None,
    typer.Option(
        "--delimiter", help="CSV/TSV: the field delimiter (default , for csv, tab for tsv).", show_default=False
    ),
]
Encoding = Annotated[
    str | None,
    typer.Option(
        "--encoding", help="The file's text encoding, a Python codec name (default utf-8).", show_default=False
    ),
]
