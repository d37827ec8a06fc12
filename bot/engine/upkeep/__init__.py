"""The memory's upkeep between turns: summaries and chapters, facts and recall, the players' private memories,
the embedding index, and what /memory-status shows of it."""
