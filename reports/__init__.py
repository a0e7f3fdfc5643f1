"""Renderers for what users see: the PR comments (Markdown), the terminal (rich) and a
self-contained HTML page with plots, all from a comparison document and a coverage result.

    from reports.markdown import render_performance, render_accuracy, render_coverage
    from reports.terminal import render_text
    from reports.html import render_html, write_html

Nothing is imported here, so ``import reports.markdown`` does not pay for matplotlib.
"""
