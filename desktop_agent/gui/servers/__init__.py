"""Model servers: the catalog that finds them, the picker, applying the choice."""
