"""Name the papers by their authors and year in everything the site renders from the code.

The package's docstrings and the command line's help cite the papers by the project's internal file
names ("seed 000", ``000_455db39b8f235120.txt``); a reader of the site knows them as "ElSalamouny et
al. 2014" and finds them in the bibliography. This extension rewrites those names in docstrings
(``autodoc-process-docstring``) and in every other text of a page (``doctree-read``: the CLI
reference that sphinx-argparse builds from the parser's help strings). The code is left unchanged.
"""

from __future__ import annotations

import re

from docutils import nodes

#: internal number → (author-year name, internal file name)
PAPERS = {
    "000": ("ElSalamouny, Chatzikokolakis and Palamidessi 2014", "000_455db39b8f235120.txt"),
    "001": ("Alvim, Andrés, Chatzikokolakis, Degano and Palamidessi 2015", "001_c2128648fe62df4d.txt"),
    "002": ("Chatzikokolakis, Andrés, Bordenabe and Palamidessi 2013", "002_3df4dd999d47c651.txt"),
    "003": ("Alvim, Andrés, Chatzikokolakis and Palamidessi 2011", "003_9b0233731f1712d6.txt"),
    "004": ("ElSalamouny, Chatzikokolakis and Palamidessi 2013", "004_1b6b4e800ded7b68.txt"),
}
SHORT = {
    "000": "ElSalamouny et al. 2014", "001": "Alvim et al. 2015", "002": "Chatzikokolakis et al. 2013",
    "003": "Alvim et al. 2011", "004": "ElSalamouny et al. 2013",
}

_FILE = re.compile(r"(?:\.\./shared/papers/)?(00[0-4])_[0-9a-f]{16}\.txt")
_SEEDS = re.compile(r"\b[Ss]eeds? (00[0-4])((?:(?:, | and | or |/)00[0-4])*)")
_SHARED = re.compile(r"``(?:\.\.|/work)/shared/papers(?:/INDEX\.md)?``|(?:\.\.|/work)/shared/papers(?:/INDEX\.md)?")


def _seeds(m: re.Match) -> str:
    nums = [m.group(1)] + re.findall(r"00[0-4]", m.group(2) or "")
    return "; ".join(SHORT[n] for n in nums)


def rewrite(text: str) -> str:
    """Replace the internal names of the papers in ``text`` by their authors and year."""
    # "``000_…txt``: ElSalamouny, …" in a References entry already names the paper after the colon.
    text = re.sub(r"``(?:\.\./shared/papers/)?00[0-4]_[0-9a-f]{16}\.txt``\s*:\s*", "", text)
    text = _FILE.sub(lambda m: SHORT[m.group(1)], text)
    text = _SEEDS.sub(_seeds, text)
    text = _SHARED.sub("the five papers of the bibliography", text)
    return text


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = rewrite("\n".join(lines)).split("\n")


def _doctree_read(app, doctree):
    for node in list(doctree.findall(nodes.Text)):
        new = rewrite(str(node))
        if new != str(node):
            node.parent.replace(node, nodes.Text(new))


def setup(app):
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("doctree-read", _doctree_read)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
