"""The jinja2 environments: HTML with autoescape; Markdown with our own escape applied to every
``{{ }}`` that is not marked Trusted, so a template cannot forget to escape a name."""
from __future__ import annotations

from functools import cache

import jinja2
import markupsafe

from . import formatting as fmt
from .escape import Trusted, code_span, html_inline, md, show_bidi


def _trusted(fn):
    return lambda *args, **kwargs: Trusted(fn(*args, **kwargs))


def _finalize(value: object) -> str:
    if value is None:
        return ""
    return md(value)


def _add_filters(env: jinja2.Environment, wrap) -> None:
    env.filters.update(
        rate=wrap(fmt.rate), signed_pct=wrap(fmt.signed_pct), coverage_pct=wrap(fmt.coverage_pct),
        number=wrap(fmt.number), mebibytes=wrap(fmt.mebibytes), micros=wrap(fmt.micros),
        signed_micros=wrap(fmt.signed_micros),
        # commits come from documents: left to the environment's escaping
        short_sha=fmt.short_sha,
        perf_mark=wrap(lambda m: fmt.PERF_MARKS.get(m, "❌")),
        accuracy_mark=wrap(lambda s: fmt.ACCURACY_MARKS.get(s, "❌")),
        accuracy_words=wrap(lambda s: fmt.ACCURACY_WORDS.get(s, "")),
        perf_symbol=wrap(lambda m: fmt.PERF_SYMBOLS.get(m, "✗")),
        accuracy_symbol=wrap(lambda s: fmt.ACCURACY_SYMBOLS.get(s, "✗")),
    )


@cache
def markdown_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"), autoescape=False,
        finalize=_finalize, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined)
    _add_filters(env, _trusted)
    env.filters["trusted"] = Trusted
    env.filters["code"] = code_span
    env.filters["summary_text"] = html_inline
    env.filters["kernels"] = lambda items: Trusted(", ".join(
        f"{md(k.get('name', ''))} ({md(k.get('op', ''))})" for k in items))
    return env


def _html_finalize(value: object) -> object:
    # Autoescaping leaves bidirectional controls alone; they are shown instead (Markup stays Markup).
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(show_bidi(str(value)))
    return show_bidi(value) if isinstance(value, str) else value


@cache
def html_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"), autoescape=True,
        finalize=_html_finalize, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    _add_filters(env, lambda fn: fn)
    return env
