"""What the scripts that drive `rayo serve` with the official `openai` package share:
the import (exit status 77, a skip, when the package is absent) and the checks' record."""
import sys

try:
    import openai  # noqa: F401  (re-exported for the scripts)
except ImportError as e:  # the caller turns this into a skip with this message
    print(f"the openai package is not installed ({e}); run scripts/install-deps.sh", file=sys.stderr)
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def report(what: str) -> int:
    """The exit status: 1 when any check failed."""
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print(f"all {what} checks passed")
    return 0
