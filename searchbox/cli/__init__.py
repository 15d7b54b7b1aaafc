"""Command line: python -m searchbox run | tool | ingest | precompute | retrieval-eval | score | ablate | report | conformance | knobs | doctor.

One module per command, each with `add_to` (its parser) and `run` (the command); main.py builds the
parser from them and runs the one asked for. Every command that takes a dataroom exits with status 2
and a plain message when the dataroom is refused; a tool that fails prints its error result and exits
with status 1. What the commands print quotes the model and the documents (answers, tool results,
paths): it reaches the terminal without terminal control codes (searchbox.inert.terminal), so none of
it can rewrite, hide or retitle what the terminal shows.
"""
