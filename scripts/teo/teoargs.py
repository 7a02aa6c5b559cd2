# SPDX-License-Identifier: GPL-2.0
"""argparse for the Python tools of scripts/teo and tools/testing/cpuidle.

A bad command line gets one line on standard error (the error and where
to find the usage) and exit status 2, not argparse's usage block.
"""

import argparse
import sys


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line."""

    def error(self, message):
        sys.stderr.write("%s: error: %s (%s --help for usage)\n" % (self.prog, message, self.prog))
        sys.exit(2)
