"""What the model is sent: token counts, compaction, prompt size, content parts, history.

Also tool results cut to a token budget in the request (``result_budget``),
where a history lives between runs (``history_stores``) and the invariants
every history keeps (each tool call answered). A prompt becomes the user
message at the core's top (``prompt_intake``), because the UserPromptSubmit
hooks it runs are the tooling's, above this package.
"""
