"""Widgets: the Line-API table."""
