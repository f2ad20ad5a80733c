"""The suite's fixtures live in `testkit` (import data from there: ``from testkit import TOY``; the name
``conftest`` is shared by every folder's conftest.py, so ``from testkit import`` may find another one)."""
from testkit import *  # noqa: F401,F403
