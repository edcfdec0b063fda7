"""Screens: the resume confirmation, help, the error screen."""
