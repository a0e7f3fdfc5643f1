"""Renderers for what users see: the PR comments (Markdown), the terminal (rich) and a
self-contained HTML page with plots, all from a comparison document and a coverage result."""
