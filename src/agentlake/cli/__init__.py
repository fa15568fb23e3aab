"""The ``agentlake`` command line: thin doors onto the library.

Every module in this package except ``main`` and ``output`` is a command group. It exposes
``register(app: typer.Typer) -> None`` and is discovered by ``main``; a new group needs no
edit anywhere else. Commands parse options, call one library function and render its result.
Heavy libraries are imported inside the command functions so ``--help`` stays fast.
"""
