"""``stackwars report``: the report's data from runs (data.py, with groups.py, explain.py,
provenance.py and ir.py), that data as blocks (layout.py), the blocks as one self-contained
HTML file (page.py) or GitHub Markdown (markdown.py), and its figures (figures.py, with
figure_kit.py and figures_across.py; matplotlib is imported in figures.py only)."""
