"""A short walk through the SPI on the in-memory provider (``make run``)."""

from __future__ import annotations

import spi


def main() -> None:
    """Create a table, write, read, scan and count, explaining each step."""
    p = spi.connect("memory://")
    spec = spi.TableSpec(
        "orders",
        [
            spi.Field("region", "string"),
            spi.Field("id", "long"),
            spi.Field("status", "string"),
            spi.Field("total", "double"),
        ],
        primary_key=["region", "id"],
        indexes=["status"],
    )
    p.admin.create(spec)
    print("created table 'orders' (key: region, id; index: status) on memory://")
    orders = p.table("orders")
    n = orders.load(
        {"region": r, "id": i, "status": "open" if i % 3 else "closed", "total": i * 10.5}
        for i, r in enumerate(["eu", "us", "ap"] * 4)
    )
    print(f"loaded {n} rows with load()")
    print("read ('eu', 3):", orders.read(("eu", 3)))
    print("scan of region 'eu' where total >= 50:")
    for row in orders.scan(spi.Range.prefix(("eu",)), where=spi.col("total") >= 50):
        print("  ", row.to_dict())
    print("increment ('eu', 3).total by 1 ->", orders.increment(("eu", 3), "total", 1))
    print("count where status = 'open':", orders.count(where=spi.parse_where("status = 'open'", spec)))
    print("explain:", orders.explain(where=spi.parse_where("status = 'open'", spec)).replace("\n", "; "))


if __name__ == "__main__":
    main()
