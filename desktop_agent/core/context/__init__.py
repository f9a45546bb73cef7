"""What the model is sent: token counts, compaction, prompt size, content parts, history.

Also where a history lives between runs (``history_stores``) and the
invariants every history keeps (each tool call answered).
"""
