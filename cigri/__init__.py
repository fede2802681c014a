"""cigri: a grid campaign toolkit (CiGri-compatible), on a local SQLite state file."""
