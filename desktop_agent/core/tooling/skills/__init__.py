"""Skills and slash commands: Markdown a person (or a project) writes for the agent.

Read from folders (the app's project and user folders, or a script's own
``AgentOptions(skills_dirs=..., commands_dirs=...)``): a skill is a folder with a
``SKILL.md`` the model loads through a tool when it applies; a command is a
Markdown file whose text becomes the prompt for ``/name``.
"""
