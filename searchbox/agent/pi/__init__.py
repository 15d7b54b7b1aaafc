"""HARNESS=pi (design §2.3, issue 23): the Pi coding agent, driven in RPC mode, as one driver of the turn machine.

install: where Node and Pi are and whether they can run; config: Pi's models.json and settings.json for a run;
rpc: the Pi process and its JSON-lines protocol; tool_server: the local socket through which Pi's tools run
searchbox's own; driver: one turn driven through Pi, its events recorded as searchbox's (turns, budget, stops
and the backstop are the turn machine's, agent/turns.py).
The extension Pi loads is pi/extensions/searchbox-tools.ts, beside pi/package.json.
"""
