"""The dashboard's screens: the table list, a table's rows, and the screens and dialogs
opened from them."""
