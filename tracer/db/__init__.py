"""The SQLite file: its schema (versioned, migrated in place), the background writer,
serialisation, the search index, the kept counts, retention. Below both sides."""
