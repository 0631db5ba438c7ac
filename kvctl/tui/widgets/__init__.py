"""The dashboard's own widgets: the rows grid, the table list and the filter bar."""
