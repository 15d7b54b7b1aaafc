"""HARNESS=pi (design §2.3, issue 23): the Pi coding agent driven in RPC mode behind the loop's interface.

install: where Pi is and whether it can run; rpc: the Pi process and its JSON-lines protocol;
tool_server: the local socket through which Pi's tools run searchbox's own; translate: Pi's events
as searchbox's; loop: the run itself (turns, budget forcing, stops, the backstop, records).
The extension Pi loads is pi/extensions/searchbox-tools.ts, beside pi/package.json.
"""
