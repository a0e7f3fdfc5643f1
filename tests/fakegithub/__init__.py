"""A fake GitHub REST API server for tests: real HTTP on 127.0.0.1, PyGithub talks to it unmodified."""
from .faults import Fault, bad_gateway, forbidden, leaky, rate_limited, too_many_requests
from .server import PREFIX, FakeGitHub
from .state import State

__all__ = ["PREFIX", "Fault", "FakeGitHub", "State", "bad_gateway", "forbidden", "leaky",
           "rate_limited", "too_many_requests"]
