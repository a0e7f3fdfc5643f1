"""Lowerings of the recurrent ops (filled in below as their definitions settle)."""
