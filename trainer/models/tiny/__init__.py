"""The tiny character-level model: its architecture, its cold start and the models derived from it."""
