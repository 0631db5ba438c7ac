"""Issue 26, every dashboard point in a real terminal: ``kvctl dashboard`` in tmux at
80x24 and 140x45, on RocksDB and on PostgreSQL, over real public data (vega_datasets'
airports: 3,376 rows, ``NA`` city and state). One walk per provider and size goes
through every point, reading the screen as the user sees it and comparing it with
what the test computes from the same CSV file: the table list's whole counts, key
columns first and marked, nulls apart from the next column, the table's own filter
example, go to a key the filter hides and to a key prefix, ``1 row``, the info view
(count, size, change sparkline or "no change feed", column nulls/min/max, histogram),
the add form (typing lands in the first field, Enter walks the fields, ctrl+s saves,
its keys in the footer) and ``? Help``/``q Quit`` leading the footer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from cli_support import PROVIDER_KINDS, provider_url
from dashboard_support import Tmux, dashboard_command, terminal, toast_text, wait_for_file
from public_data import csv_rows, vega_csv

import spi

tmux = pytest.fixture(terminal)

SIZES = [(80, 24), (140, 45)]
NUMBERS = ("latitude", "longitude")
AIRPORTS = spi.TableSpec(
    "airports",
    [spi.Field(c, "double" if c in NUMBERS else "string") for c in ("iata", "name", "city", "state", "country")]
    + [spi.Field(c, "double") for c in NUMBERS],
    primary_key=["country", "iata"],  # declared fifth and first: the grid shows country first
    changes=True,
)
STOCKS = spi.TableSpec(
    "stocks",
    [spi.Field("symbol", "string"), spi.Field("date", "string"), spi.Field("price", "double")],
    ["symbol", "date"],
)


def typed(rows: list[dict[str, str | None]], spec: spi.TableSpec) -> list[dict[str, Any]]:
    """CSV records with the spec's double columns as floats."""
    doubles = [c for c in spec.columns if spec.type_of(c) is spi.FieldType.DOUBLE]
    return [{**r, **{c: None if r[c] is None else float(r[c]) for c in doubles}} for r in rows]  # type: ignore[arg-type]


def footer(screen: str) -> str:
    return screen.rstrip().splitlines()[-1]


def help_and_quit_lead(screen: str) -> bool:
    """The footer starts with ``? Help`` and has ``q Quit`` (the screen's own keys after them)."""
    return footer(screen).startswith("? Help") and "q Quit" in footer(screen)


def status(screen: str) -> str:
    """The status line (above the footer)."""
    return screen.rstrip().splitlines()[-2]


def without_scrollbar(line: str) -> str:
    """``line`` without the end of a vertical scrollbar's thumb at the right edge.

    Where the thumb ends partway through a cell, Textual draws it with a block glyph
    (``▅▅``); where that lands depends on the content's height, so it must not count
    as a word of the line.
    """
    return re.sub(r"\s+[▁▂▃▄▅▆▇█]{1,2}\s*$", "", line)


def histogram_counts(lines: list[str]) -> list[int]:
    """The counts of a histogram drawn on the screen (``low \u2013 high ███ count``)."""
    bar = re.compile(r"^\s*-?[\d.,]+ \u2013 -?[\d.,]+ [█▏]* ?([\d,]+)$")
    return [int(m.group(1).replace(",", "")) for m in map(bar.match, map(without_scrollbar, lines)) if m]


def buckets(values: list[float], n: int = 10) -> list[int]:
    """``values`` counted into ``n`` equal buckets between their min and max."""
    lo, hi = min(values), max(values)
    counts = [0] * n
    for v in values:
        counts[min(int((v - lo) / (hi - lo) * n), n - 1)] += 1
    return counts


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_every_dashboard_point_in_a_terminal(
    kind: str, size: tuple[int, int], tmux: Tmux, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    airports = typed(csv_rows(vega_csv("airports.csv")), AIRPORTS)
    stocks = typed(csv_rows(vega_csv("stocks.csv")), STOCKS)
    url = provider_url(kind, tmp_path, request)
    with spi.connect(url) as p:
        p.admin.create(AIRPORTS)
        p.admin.create(STOCKS)
        p.table("airports").load(airports)
        p.table("stocks").load(stocks)
    in_order = sorted(airports, key=lambda r: (r["country"], r["iata"]))
    exit_status = tmp_path / "exit-status"
    tmux.start(dashboard_command(url, tmp_path / "state", status=exit_status), size=size)

    # the table list: whole counts; help and quit lead the footer
    screen = tmux.wait_for(lambda s: "3,376" in s and " 560 " in s and help_and_quit_lead(s), "the table list")
    assert re.search(r"airports +3,376 +on ", screen) and re.search(r"stocks +560 +off ", screen), screen
    assert "2 tables" in status(screen)

    # the rows: key columns first and marked, a null apart from the next column
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "of 3,376" in s and "⚷ country" in s and help_and_quit_lead(s), "the rows")
    heading = next(line for line in screen.splitlines() if "⚷ country" in line)
    assert heading.index("⚷ country") < heading.index("⚷ iata") < heading.index("name"), heading
    first = in_order[0]  # Yap, Federated States of Micronesia: no city, no state
    assert first["city"] is None
    line = next(line for line in screen.splitlines() if f" {first['iata']} " in line)
    assert line.count("null") >= 1 and len(re.findall(r" null(?=  )", line)) == line.count("null"), line

    # go to a key prefix; one row is "1 row"
    thai = next(r for r in in_order if r["country"] == "Thailand")
    tmux.keys("g")
    tmux.wait_for_text("Go to key")
    tmux.type("country=Thailand")
    tmux.keys("Enter")
    screen = tmux.wait_for_text(f"rows from country=Thailand iata={thai['iata']} of 3,376")
    last = in_order[-1]
    tmux.keys("g")
    tmux.wait_for_text("Go to key")
    tmux.type(f"country={last['country']} iata={last['iata']}")
    tmux.keys("Enter")
    screen = tmux.wait_for_text(f"1 row from country={last['country']} iata={last['iata']} of 3,376")
    assert "1 rows" not in screen

    # the info view: count, size, the change sparkline, column statistics, a histogram
    latitudes = [r["latitude"] for r in airports]
    want = {}
    for column in ("city", "state", *NUMBERS):
        values = [r[column] for r in airports if r[column] is not None]
        nulls = len(airports) - len(values)
        want[column] = [AIRPORTS.type_of(column).value, str(nulls), str(min(values)), str(max(values))]

    def stats_shown(screen: str) -> bool:
        """Every column's statistics drawn whole (they fill in as the reads answer)."""
        words = [without_scrollbar(line).split() for line in screen.splitlines()]
        stats = {w[0]: w[1:] for w in words if w}
        return all(stats.get(column) == expected for column, expected in want.items())

    tmux.keys("i")
    screen = tmux.wait_for_text("rows: 3,376", "3,376 events", str(max(latitudes)), "of values")
    screen = tmux.wait_for(stats_shown, f"the columns' statistics {want}")
    assert "change events per minute" in screen and re.search(r"[▁▂▃▄▅▆▇█]{20}", screen), screen
    if kind == "rocksdb":
        assert "the store on disk: " in screen
    tmux.keys("End")
    expected = buckets(latitudes)  # scrolled to: wait for its last line
    screen = tmux.wait_for(lambda s: histogram_counts(s.splitlines()) == expected, f"the histogram {expected}")
    assert "latitude: 3,376 values in 10 buckets" in screen
    assert help_and_quit_lead(screen) and "esc Back" in footer(screen), footer(screen)
    tmux.keys("Escape")
    tmux.wait_for_text("1 row from")

    # the add form: typing lands in the first field, Enter walks, ctrl+s saves
    tmux.keys("a")
    tmux.wait_for(
        lambda s: (
            "New row in airports" in s
            and "ctrl+s save" in s
            and footer(s).startswith("^s Save")
            and "esc Cancel" in footer(s)
        ),
        "the add form, its keys in the footer",
    )
    tmux.type("TST")
    tmux.wait_for_text("TST")
    tmux.keys("Enter")
    tmux.type("Test field")
    tmux.wait_for_text("Test field")
    tmux.keys("Enter", "Enter", "Enter")  # city, state: null
    tmux.type("Testland")
    tmux.wait_for_text("Testland")
    tmux.keys("C-s")
    tmux.wait_for(lambda s: "New row in airports" not in s and "of 3,377" in s, "the row saved")

    # the filter's placeholder: this table's own example, from its first row
    tmux.keys("/")
    screen = tmux.wait_for(lambda s: footer(s).startswith("^p Palette  / Filter"), "the filter's input focused")
    assert f"iata = '{first['iata']}' and latitude > {first['latitude']}" in screen, screen
    tmux.type("state = 'TX'")
    tmux.keys("Enter")
    texans = [r for r in in_order if r["state"] == "TX"]
    tmux.wait_for_text(f"of {len(texans)} · where state = 'TX'")

    # go to a key the filter hides: said hidden, the matching rows after it shown
    hidden = next(r for r in in_order if r["country"] == "Palau")
    assert hidden["state"] != "TX"
    after = next(r for r in texans if (r["country"], r["iata"]) > (hidden["country"], hidden["iata"]))
    tmux.keys("g")
    tmux.wait_for_text("Go to key")
    tmux.type(f"country={hidden['country']} iata={hidden['iata']}")
    tmux.keys("Enter")
    screen = tmux.wait_for_text("hidden")  # the note covers the status line's end until it goes
    assert f"country=Palau iata={hidden['iata']} is hidden by the filter" in toast_text(screen), screen
    assert f"no row country=Palau iata={hidden['iata']}" not in toast_text(screen)
    top = screen.splitlines()[next(i for i, line in enumerate(screen.splitlines()) if "⚷ country" in line) + 1]
    assert f" {after['iata']} " in top and "USA" in top, top

    # a table without a change feed says so
    tmux.keys("Escape")
    tmux.wait_for_text("2 tables")
    tmux.keys("Down", "Enter")
    tmux.wait_for_text("stocks · rows 1", "of 560")
    tmux.keys("i")
    tmux.wait_for_text("rows: 560", "no change feed")
    tmux.keys("q")
    assert wait_for_file(exit_status).strip() == "0"
    with spi.connect(url) as p:
        row = p.table("airports").read(("Testland", "TST"))
        assert row is not None and dict(row) == {
            **dict.fromkeys(AIRPORTS.columns),
            "iata": "TST",
            "name": "Test field",
            "country": "Testland",
        }
