"""``python -m structperc``: the command line."""
from structperc.cli import main

if __name__ == "__main__":
    main(prog_name="structperc")
