"""The error a user can cause, shared by every front end and library of the project.

An exception deriving from ``UserError`` carries a one-line message that the ``perfbot`` CLI
prints as it is, exiting 2 instead of showing a traceback.
"""


class UserError(Exception):
    """An error caused by input the user gave us; its message is one readable line."""
