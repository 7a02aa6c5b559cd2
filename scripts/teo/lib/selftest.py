# SPDX-License-Identifier: GPL-2.0
"""The self-tests of the Python tools of scripts/teo: named checks, one line
each, then the "NAME: N passed, N failed" line that scripts/teo/check/check reads.
"""


def report(suite, checks):
    """Print each (name, ok) of CHECKS and SUITE's totals; return the number
    of failures."""
    failed = 0
    for name, ok in checks:
        print("%s  %s" % ("ok  " if ok else "FAIL", name))
        failed += not ok
    print("%s: %d passed, %d failed" % (suite, len(checks) - failed, failed))
    return failed
