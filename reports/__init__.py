"""Renderers for what users see: the PR comments (Markdown), the terminal (rich), a
self-contained HTML page with plots, and every command's own output (``run``, ``compare``,
``bisect``, ``history``, ``drift``, ``calibrate``, ``doctor``, ``compile``, ``results list``).

Every renderer takes plain data: the documents the bot writes (dicts), or an object with the
fields ``coverage_input`` names. Nothing here imports the bot, which imports this package.

    from reports.markdown import render_performance, render_accuracy, render_coverage
    from reports.terminal import render_text
    from reports.html import render_html, write_html
    from reports.compare_table import render_compare      # `perfbot compare` in every format

Nothing is imported here, so ``import reports.markdown`` does not pay for matplotlib.
"""
