"""Model servers: the catalog that finds them and the picker (the window applies the choice)."""
