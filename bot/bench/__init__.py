"""Benchmarks that print figures: ``python -m bot bench NAME``. Each ends with one ``name=value`` line."""
