"""A game master for text role-playing games, with a local model and a long memory."""

__version__ = "0.1.0"
