"""The Models window: GGUF models on this computer, downloads, and running one.

The widgets show what the engine found and forward what the person asks for;
:mod:`.local_models_bridge` is the one module that talks to the engine (scans and
downloads in worker threads, engines started on the event loop's thread).
"""
