"""Slash commands and skills: Markdown a person (or a project) writes for the agent."""
