"""``python -m fleetlab.cli``: the same command line as the ``fleetlab`` script."""

from fleetlab.cli import main

if __name__ == "__main__":
    main()
