"""A turn, from the action to the reply posted: the prompt, the model's draft read through the reply rules, the
leak guard's check, the round, an edit or a retry."""
