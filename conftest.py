"""pytest set-up for the literal `pytest --nbval notebooks/`, run from anywhere in the project.

nbval takes its sanitising rules and its kernel only from the command line. An instructor who
types the plain command should get exactly what `make test` runs, so unless the command names
its own, the notebooks are compared through `notebooks/nbval_sanitize.cfg` and executed by the
Python that runs pytest (the environment the course is installed in).
"""
from pathlib import Path

SANITIZE_RULES = Path(__file__).resolve().parent / "notebooks" / "nbval_sanitize.cfg"


def pytest_configure(config):
    option = config.option
    if not hasattr(option, "nbval_sanitize_with"):  # nbval is not installed
        return
    if option.nbval_sanitize_with is None and not option.sanitize_with:
        option.nbval_sanitize_with = str(SANITIZE_RULES)
    if not (option.nbval_kernel_name or option.current_env):
        option.nbval_current_env = True
