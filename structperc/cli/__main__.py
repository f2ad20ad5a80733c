"""`python -m structperc.cli`: the same as the `structperc` command."""
from structperc.cli import main

main()
