"""Errors a user can cause by pointing perfbot at a bad coverage report or diff."""
from common.errors import UserError


class CoverageInputError(UserError):
    """A coverage report or diff that is missing, unreadable or in no format we know."""
