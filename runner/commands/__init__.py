"""One module per command-line verb; each has ``add_parser(subparsers)`` and ``main(args) -> exit code``."""
