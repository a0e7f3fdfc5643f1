"""Keep secrets out of everything we print or log.

PyGithub's own exception text contains the server's reply, and a proxy or a misconfigured
Enterprise server may echo request headers into it, so every message we show goes through a
``Redactor`` first, and the loggers of PyGithub and urllib3 get a filter doing the same.
"""
from __future__ import annotations

import logging
import urllib.parse

MASK = "***"

# The loggers that see requests and replies; a filter on a logger only covers records created by
# that very logger, hence the leaves are listed, not just the parents.
_LOGGERS = (
    "github",
    "github.Requester",
    "github.GithubRetry",
    "urllib3",
    "urllib3.connectionpool",
    "urllib3.util.retry",
)


class Redactor:
    """Replaces every known secret (and its URL-encoded form) in a text by ``***``."""

    def __init__(self, *secrets: str | None):
        forms: set[str] = set()
        for secret in secrets:
            # Very short values would mask ordinary words; a real token is never that short.
            if secret and len(secret) >= 4:
                forms.update({secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)})
        # Longest first, so a secret that contains another is masked whole.
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: object) -> str:
        out = str(text)
        for form in self._forms:
            out = out.replace(form, MASK)
        return out


class RedactingFilter(logging.Filter):
    """A logging filter that renders each record's message once and redacts it."""

    def __init__(self, redactor: Redactor):
        super().__init__("perfbot-redact")
        self.redactor = redactor
        self.restore_level = logging.NOTSET

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: still never let its raw arguments through
            message = str(record.msg)
        record.msg, record.args = self.redactor(message), None
        if record.exc_text:
            record.exc_text = self.redactor(record.exc_text)
        return True


def install_log_redaction(redactor: Redactor) -> RedactingFilter:
    """Attach a redacting filter to the HTTP loggers; returns it so callers can remove it.

    PyGithub also sets its logger to INFO with a stderr handler at import, so every retried 403
    would print lines that read like errors before our own one-line message; while the filter is
    installed that default is lowered to WARNING (a level somebody chose on purpose is kept).
    """
    flt = RedactingFilter(redactor)
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(flt)
    pygithub = logging.getLogger("github")
    flt.restore_level = pygithub.level
    if pygithub.level == logging.INFO:
        pygithub.setLevel(logging.WARNING)
    return flt


def remove_log_redaction(flt: RedactingFilter) -> None:
    for name in _LOGGERS:
        logging.getLogger(name).removeFilter(flt)
    pygithub = logging.getLogger("github")
    if pygithub.level == logging.WARNING and flt.restore_level == logging.INFO:
        pygithub.setLevel(logging.INFO)
