"""The seven built-in tools, with the Pi coding agent's semantics (design §2.4), one module each with its
schema beside its function, and the helpers only they use beside them (common, bash_programs for bash,
rg_events for grep). Paths stay inside work/ and nothing is written inside dataroom/ (design §5)."""

from searchbox.tools.builtin import bash, edit, find, grep, ls, read, write

BUILTIN_TOOLS = (read.read, bash.bash, edit.edit, write.write, grep.grep, find.find, ls.ls)
