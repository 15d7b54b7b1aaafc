"""Tool calls a model wrote as text, read back: the call formats chat templates teach (parsing: tagged JSON
and Qwen's XML; call_format: which one a template teaches, and an example call in it), the calls small models
write outside those tags (written_calls, TOOL_CALL_PARSING=lenient through call_parsing), one call object
and its arguments (call_objects), and broken JSON repaired (jsonfix)."""
