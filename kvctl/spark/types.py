"""The one type mapping between spi, Spark and Arrow (both directions)."""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spi import FieldType, InvalidFieldError, TableSpec

SPARK_TYPES: dict[FieldType, DataType] = {
    FieldType.INT: IntegerType(),
    FieldType.LONG: LongType(),
    FieldType.FLOAT: FloatType(),
    FieldType.DOUBLE: DoubleType(),
    FieldType.STRING: StringType(),
    FieldType.BYTES: BinaryType(),
    FieldType.BOOL: BooleanType(),
    FieldType.TIMESTAMP: TimestampType(),
}
"""spi type → Spark type (exact: no widening, no narrowing)."""

_FROM_SPARK: dict[str, FieldType] = {t.typeName(): f for f, t in SPARK_TYPES.items()}
_FROM_SPARK[TimestampNTZType().typeName()] = FieldType.TIMESTAMP  # taken as UTC, like the CLI


def spark_schema(spec: TableSpec) -> StructType:
    """The Spark schema of a table: its fields in declaration order, key columns non-null."""
    return StructType([StructField(f.name, SPARK_TYPES[f.type], nullable=not spec.is_key(f.name)) for f in spec.fields])


def field_type_of(column: str, data_type: DataType) -> FieldType:
    """The spi type for a Spark column (``import --create``): int32→int, int64→long,
    float→float, double→double, string→string, binary→bytes, boolean→bool,
    timestamp→timestamp; anything else is an :class:`InvalidFieldError`."""
    ftype = _FROM_SPARK.get(data_type.typeName())
    if ftype is None:
        supported = ", ".join(sorted(t.simpleString() for t in SPARK_TYPES.values()))
        raise InvalidFieldError(
            f"column {column!r} has type {data_type.simpleString()}, which has no kvctl type; supported: {supported}",
            column=column,
        )
    return ftype


def spec_from_schema(name: str, schema: StructType, primary_key: list[str]) -> TableSpec:
    """A table spec for ``import --create``: one field per column, typed by :func:`field_type_of`."""
    missing = [k for k in primary_key if k not in schema.fieldNames()]
    if missing:
        raise InvalidFieldError(
            f"--pk names {', '.join(missing)}, not in the input's columns ({', '.join(schema.fieldNames())})",
            column=missing[0],
        )
    fields = [(f.name, field_type_of(f.name, f.dataType).value) for f in schema.fields]
    return TableSpec(name, fields, primary_key)


CHANGE_COLUMNS: tuple[tuple[str, DataType, bool], ...] = (
    ("_revision", LongType(), False),
    ("_op", StringType(), False),
    ("_version", LongType(), True),
    ("_time", TimestampType(), False),
)
"""The columns a change event adds to the table's (name, Spark type, nullable): its
revision, operation (put, delete, expire), the row's version after a put (else null)
and the commit time."""


def change_schema(spec: TableSpec) -> StructType:
    """The Spark schema of a table's change events (``changes=true``, ``export
    --changes``): the table's columns (key columns non-null, the others null for a
    delete or expire), then :data:`CHANGE_COLUMNS`."""
    schema = spark_schema(spec)
    clash = [name for name, _, _ in CHANGE_COLUMNS if spec.has_column(name)]
    if clash:
        raise InvalidFieldError(
            f"table {spec.name!r} has a column named {clash[0]!r}, which its change events use for themselves",
            column=clash[0],
        )
    for name, data_type, nullable in CHANGE_COLUMNS:
        schema = schema.add(name, data_type, nullable)
    return schema
