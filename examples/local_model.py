"""Run a model on this computer with the app's own engine, and ask it one thing.

No LM Studio, Ollama or server of any kind: ``LocalModel`` starts llama.cpp (the
``xllamacpp`` wheel, the ``engine`` extra) in a child process on 127.0.0.1 with a
random key, and stops it when the block ends (or this script is killed). The model
is a .gguf file's path or any name ``desktop-agent models`` lists: a file name, an
Ollama ``name:tag``, a catalog id such as ``qwen3-1.7b`` once downloaded
(``desktop-agent models pull qwen3-1.7b``).

    python examples/local_model.py qwen3-1.7b-q4_k_m.gguf
"""

import asyncio
import sys

from desktop_agent import AgentOptions, LocalModel, query


async def main(model: str) -> None:
    async with LocalModel(model, context_length=2048) as server:
        print(f"{server.model} runs at {server.base_url} "
              f"with {server.context_length} tokens of context")
        options = AgentOptions(base_url=server.base_url, model=server.model,
                               api_key=server.api_key, max_tokens=48)
        print(await query("Say hello in five words.", options))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "qwen3-1.7b-q4_k_m.gguf"))
