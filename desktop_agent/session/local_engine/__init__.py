"""The app's engine as one service: the models on this computer, for every front end.

One :class:`~desktop_agent.session.local_engine.local_engine.LocalEngine` per app
(the window's, ``serve``'s) owns the running models, the model library, downloads
and the person's engine preferences, and gives turns of conversations set to
``server: "local"`` the engine's address and key. Qt-free; front ends reach it
through :mod:`desktop_agent.session`'s ``__all__``.
"""
