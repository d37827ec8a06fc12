"""The table's settings and seats: what the process gives every game, each game's and each server's settings,
the seats, a player's notes, and what the process keeps of a game between turns."""
