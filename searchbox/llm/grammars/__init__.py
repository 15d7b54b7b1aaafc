"""GBNF grammars that hold the built-in runtime's model to a valid tool call: JSON that follows a tool's
schema with its lists and strings bounded (schema_grammar), one forced call in the template's own format
(tool_grammar), and a template-less base model's JSON actions, each reply one grammar-held object
(json_actions)."""
