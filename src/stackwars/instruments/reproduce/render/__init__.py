"""An edition shown to people: ``findings`` (the Markdown page, per seed sentence),
``evidence`` (the sentence under each verdict that explains it) and ``page`` (the findings
as blocks of the HTML report), each from the edition file alone."""

from stackwars.instruments.reproduce.render.page import SECTIONS

__all__ = ["SECTIONS"]
