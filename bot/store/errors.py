"""The store's one error type."""
from common.errors import UserError


class StoreError(UserError):
    """The results database cannot be opened or does not hold what was asked for."""
