"""What MCP servers bring to one conversation besides tools: questions, prompts, resources."""
