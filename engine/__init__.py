"""Brim's engine: everything Brim decides and does. Nothing below this package imports Qt."""
