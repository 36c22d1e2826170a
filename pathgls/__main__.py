"""``python -m pathgls`` runs the command-line interface."""

from pathgls.cli import main

if __name__ == "__main__":
    main()
