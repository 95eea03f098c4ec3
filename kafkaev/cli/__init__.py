"""The ``kafkaev`` command line: one module per subcommand group, each with ``add_parser`` and ``run``."""
