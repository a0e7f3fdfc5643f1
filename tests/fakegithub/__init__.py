"""A fake GitHub REST API server for tests: real HTTP on 127.0.0.1, PyGithub talks to it
unmodified; lenient by default, ``FakeGitHub(strict=True)`` for GitHub's documented behaviour."""
from .endpoints import Refusal
from .faults import Fault, bad_gateway, forbidden, leaky, rate_limited, too_many_requests
from .serve import serve
from .server import PREFIX, FakeGitHub
from .state import State

__all__ = ["PREFIX", "Fault", "FakeGitHub", "Refusal", "State", "bad_gateway", "forbidden", "leaky",
           "rate_limited", "too_many_requests", "serve"]
