"""stanjax runner: engines, metrics, records and the command-line interface."""
