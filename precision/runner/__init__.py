"""Orchestration on top of the ``precision`` library: the CLI, sweeps, results and figures."""
