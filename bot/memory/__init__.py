"""Memory policy: what goes into the GM's prompt. Pure functions of plain data."""
