"""Qt-free: the models this machine can run itself, and getting more of them.

The model library (GGUF files found in LM Studio's, Ollama's, Hugging Face's and
llama.cpp's folders, read from their headers, with whether each fits in memory), a
short catalogue of small tool-calling models, and downloads from the Hugging Face
hub. The window, ``serve --model`` and SDK scripts use it; it knows no front end,
no conversation and no data folder of its own (callers pass the folders it needs).

Nothing here is imported by the window at start: each module loads what it needs
(``gguf`` for the header types, ``huggingface_hub`` for the hub) when it is used.
"""
