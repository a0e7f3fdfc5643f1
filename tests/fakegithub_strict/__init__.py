"""A second, stricter fake of GitHub's REST API for tests, written apart from ``tests/fakegithub``.

It is a WSGI application served by ``wsgiref`` in a thread. It answers the way the documentation
of docs.github.com describes (default page size 30, at most 100, absolute URLs built from the
request's Host, 201/204 codes, full comment and user objects, rate-limit headers, gzip when asked
for) and refuses what GitHub refuses (bad credentials, unknown commits, over-long bodies,
unknown paths and methods), so that code passing here depends on no quirk of the other fake.
"""
from .app import Refusal, StrictGitHub
from .serve import serve

__all__ = ["Refusal", "StrictGitHub", "serve"]
