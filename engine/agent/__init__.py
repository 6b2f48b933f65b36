"""The agent loop and what it works with: the loop, its window, its records and words."""
