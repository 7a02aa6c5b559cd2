# SPDX-License-Identifier: GPL-2.0
"""argparse for the Python tools of scripts/teo and tools/testing/cpuidle.

A bad command line gets one line on standard error (the error and where
to find the usage) and exit status 2, not argparse's usage block.
--help prints the usage, then the whole of the script's docstring, as a
bash script's --help prints the whole of its top comment, under the
script's path in the repository.
"""

import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _prog():
    """The running script's path from the top of the repository, or its
    name if it lies elsewhere."""
    path = os.path.abspath(sys.argv[0])
    if path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return os.path.basename(path)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and whose description
    is the running script's docstring, whole and as written."""

    def __init__(self, **kw):
        doc = getattr(sys.modules.get("__main__"), "__doc__", None)
        if doc and doc.strip():
            kw["description"] = doc.strip()
            kw["formatter_class"] = argparse.RawDescriptionHelpFormatter
        kw.setdefault("prog", _prog())
        super().__init__(**kw)

    def error(self, message):
        sys.stderr.write("%s: error: %s (%s --help for usage)\n" % (self.prog, message, self.prog))
        sys.exit(2)
