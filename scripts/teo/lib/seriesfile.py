# SPDX-License-Identifier: GPL-2.0
"""patches/series, read into blocks and written back byte for byte.

The file is a header (its lines up to the first blank one, if that comes
before the first entry), then entries:
an entry is a line whose first word is a message file ("NNNN-name.msg", or
"NNNN-name.msg@BASE" for a commit on that base only) followed by its items.
An entry's block is every line after the entry before it (comments,
section lines such as "[fixes] cover-fixes.txt", blank lines) and the entry
itself; lines after the last entry are the trailer.  Joining the header,
the blocks and the trailer gives the file back as it was.
"""

import os


class Entry:
    """One commit of the series: @block (its text, ending with its line),
    @msg (the message file, without @BASE), @base (the one base it is for,
    or None for every base), @items (the words after the message file) and
    @sections (the section lines of its block, as [name, word...])."""

    def __init__(self, block):
        self.block = block
        line = block.rstrip("\n").split("\n")[-1]
        words = line.split()
        self.msg, _, base = words[0].partition("@")
        self.base = base or None
        self.items = words[1:]
        self.sections = [ln.strip()[1:].replace("]", " ", 1).split()
                         for ln in block.split("\n") if ln.strip().startswith("[")]

    def step(self):
        """(NN, KIND) of the step diff patches/steps/NN-KIND.diff the entry
        applies, or None."""
        for item in self.items:
            name = item.partition("@")[0]
            if name.startswith("patches/steps/") and name.endswith(".diff"):
                nn, _, kind = os.path.basename(name)[:-len(".diff")].partition("-")
                return nn, kind
        return None

    def for_base(self, base):
        """Whether the entry makes a commit on @base."""
        return self.base is None or self.base == base

    def line(self):
        """The entry's own line."""
        return self.block.rstrip("\n").split("\n")[-1]


def is_entry(line):
    """Whether @line of patches/series is an entry (a commit)."""
    words = line.split()
    return bool(words) and words[0].partition("@")[0].endswith(".msg")


def parse(text):
    """(header, [Entry], trailer) of the text of patches/series."""
    lines = text.splitlines(keepends=True)
    n = 0
    while n < len(lines) and lines[n].strip() and not is_entry(lines[n]):
        n += 1
    n = n + 1 if n < len(lines) and not lines[n].strip() else 0
    header, entries, block = "".join(lines[:n]), [], []
    for line in lines[n:]:
        block.append(line)
        if is_entry(line):
            entries.append(Entry("".join(block)))
            block = []
    return header, entries, "".join(block)


def commits(entries, base):
    """[(section, entry)] of the @entries that make a commit on @base, in
    order, each with the section line it comes under ([name, word...], or
    None before the first)."""
    out, section = [], None
    for e in entries:
        if e.sections:
            section = e.sections[-1]
        if e.for_base(base):
            out.append((section, e))
    return out


def read(root):
    """parse() of @root/patches/series."""
    with open(os.path.join(root, "patches", "series")) as fh:
        return parse(fh.read())


def text(header, blocks, trailer):
    """The file from its parts (blocks as strings)."""
    return header + "".join(blocks) + trailer


def item_path(item):
    """The file of this repository an item names (FILE or FILE=PLACE, with
    any @BASE dropped), or None for an upstream file ("7.3:PATH")."""
    item = item.partition("@")[0]
    if ":" in item.split("=")[0]:
        return None
    return item.split("=")[0]


def item_base(item):
    """The base an item is for (its @BASE), or None for every base."""
    return item.partition("@")[2] or None
