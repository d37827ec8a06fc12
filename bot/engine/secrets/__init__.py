"""Secrets and reveals: what an action uncovers, the private clues it earns, and the leak guard over every
secret."""
