"""The one root for errors whose message is safe to show a player or an admin."""


class UserError(Exception):
    """Something the user can fix; ``str(error)`` is the sentence to show them."""


def shortened(text: str, limit: int = 60) -> str:
    """``text`` as a message echoes a name the user gave: whole up to ``limit`` characters, else its start and '…'."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
