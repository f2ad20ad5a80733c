"""The service tests' fixtures live in `servicekit` (import its data by that name: every folder's
conftest.py is imported by pytest as the module ``conftest``)."""
from servicekit import *  # noqa: F401,F403
