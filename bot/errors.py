"""The one root for errors whose message is safe to show a player or an admin."""


class UserError(Exception):
    """Something the user can fix; ``str(error)`` is the sentence to show them."""
