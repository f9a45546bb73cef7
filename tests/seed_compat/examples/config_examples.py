"""Seed example 4: the ways to say which model and server to use."""

import asyncio
import os

from desktop_agent import AgentOptions, TextBlock, query
from desktop_agent.config import get_base_url, get_model


async def ask(options: AgentOptions, prompt: str) -> str:
    out = ""
    async for msg in query(prompt, options):
        for block in msg.content:
            if isinstance(block, TextBlock):
                out += block.text
    return out


async def main() -> None:
    print("1 explicit:", AgentOptions(model="qwen2.5-7b", base_url="http://localhost:1234/v1")
          .base_url)
    print("2 ollama shortcut:", get_base_url(provider="ollama", prefer_env=False))
    print("3 llamacpp shortcut:", get_base_url(provider="llamacpp", prefer_env=False))
    print("4 vllm shortcut:", get_base_url(provider="vllm", prefer_env=False))
    print("5 fallback model:", get_model("fallback-model", prefer_env=False))
    print("6 env model:", get_model("fallback-model"))
    print("7 env set:", bool(os.environ.get("OPEN_AGENT_BASE_URL")))
    options = AgentOptions(system_prompt="Be brief.", model=get_model("qwen2.5-7b") or "x",
                           base_url=get_base_url(provider="lmstudio"))
    print("8 reply:", await ask(options, "config check"))


if __name__ == "__main__":
    asyncio.run(main())
