"""Models the app runs itself: GGUF files on disk, and llama.cpp serving one of them."""
