"""Settings + secrets + tools -> the core's AgentOptions, in one place.

Every key of
:class:`~desktop_agent.session.settings.conversation_settings.ConversationSettings`
that reaches the model is wired here and nowhere else, so both front ends send
the same request for the same conversation: sampling, ``extra_body`` (e.g.
llama.cpp's ``cache_prompt``), the tool rounds, the tools of
:class:`~desktop_agent.session.tools.tool_catalog.ToolCatalog` (MCP included),
the rules of ``config.json`` and of the conversation, the app's hooks
(``UserPromptSubmit`` too) and the command hooks of ``config.json`` (run in the
conversation's sandbox and folder, as its commands are), the permission mode,
the conversation's secrets (in its commands' environment and blanked out of
every result) and the working folder's ``AGENTS.md``
(:mod:`~desktop_agent.session.files.project_instructions`, in the system prompt).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.session.files.project_instructions import (
    ProjectInstructions,
    included,
    project_instructions_for,
    with_instructions,
)
from desktop_agent.session.settings import defaults
from desktop_agent.session.settings.conversation_secrets import conversation_environment
from desktop_agent.session.settings.permission_modes import effective_mode
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.plan import PLAN_TOOL_NAME, plan_rule
from desktop_agent.session.tools.tool_catalog import ToolCatalog, WorkdirError, workdir_path

if TYPE_CHECKING:
    from desktop_agent.core.options import AgentOptions
    from desktop_agent.core.tooling.agent_definitions import AgentDefinition
    from desktop_agent.core.tooling.builtin import CommandPreviews
    from desktop_agent.core.tooling.command_hooks import CommandHook
    from desktop_agent.core.tooling.hooks import Hooks
    from desktop_agent.core.tooling.permissions import CanUseTool, PermissionMode, PermissionRule
    from desktop_agent.core.tooling.skills.skills import Skill
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.session.turn.local_server import LocalServerFacts, LocalServers


class MissingApiKeyError(ConfigurationError):
    """The conversation names an API key that is not stored (a sentence, no value).

    A :class:`ConfigurationError`, so both front ends already map it to a
    sentence with no retry offered.
    """


@dataclass
class SessionEnvironment:
    """What every conversation of one app shares: tools, config, hooks, limits.

    Attributes:
        tools: The one tool catalog (MCP servers are shared by conversations).
        config: The app's ``config.json``.
        hooks: Hooks every turn runs (``UserPromptSubmit``, ``PreToolUse``...).
        approval_timeout: Seconds a call waits for a person; then it is denied.
        connection_pool: HTTP connections to model servers shared by every
            conversation (one pool per base URL), so idle conversations hold
            no socket of their own; None: each client has its own.
        local_servers: The app's engine, for conversations whose model runs on
            this computer (``server: "local"``); None: such a turn fails with a
            sentence saying so.
    """

    tools: ToolCatalog = field(default_factory=ToolCatalog)
    config: AppConfig = field(default_factory=AppConfig)
    hooks: Hooks | None = None
    approval_timeout: float | None = defaults.DEFAULT_APPROVAL_TIMEOUT
    connection_pool: ConnectionPool | None = None
    local_servers: LocalServers | None = None


def stored_api_key(settings: Mapping[str, Any]) -> str:
    """The key to send: the stored one the settings name, or none for local servers.

    Blocking: the keyring may wait on D-Bus or an unlock prompt.

    Raises:
        MissingApiKeyError: The named key is not stored.
    """
    key_name = settings.get("api_key_name")
    if not key_name:
        return defaults.NO_API_KEY
    from desktop_agent.appdata.secrets import get_secret

    found = get_secret(str(key_name))
    if not found:
        raise MissingApiKeyError(
            f"No API key named “{key_name}” is stored. Store it (Settings → Keys, or the "
            "secrets API) or choose another key for this conversation.")
    return found


@dataclass(frozen=True)
class OptionsRead:
    """What building a turn's options reads (blocking), read for ``settings``.

    Attributes:
        settings: The settings it was read for (the very mapping: a newer one reads again).
        api_key: The key to send.
        secrets: The conversation's secrets, for its commands' environment.
        rules: The permission rules of config.json and of the conversation.
        workdir: The built-in tools' folder, made now; None when none is on.
        instructions: The working folder's ``AGENTS.md``, when the turn sends it.
        skills: The skills offered (found, and not turned off by ``skills_off``).
        permission_mode: The mode the turn runs in (never bypass without a sandbox).
        command_hooks: The hook commands of config.json.
        hooks_problem: Why config.json's hooks are not used, if they are not.
        folder: The working folder (hooks run there; None when there are none to run).
        agents: Subagent definitions: config.json's, then the working folder's
            ``.agents/agents/`` and ``.claude/agents/`` Markdown files (same name: the folder's).
        agent_problems: Sentences on definitions that could not be read.
        subagent_limits: config.json's delegation depth and concurrency.
    """

    settings: Mapping[str, Any]
    api_key: str
    secrets: dict[str, str]
    rules: list[PermissionRule]
    workdir: Path | None
    instructions: ProjectInstructions | None
    skills: list[Skill] = field(default_factory=list)
    permission_mode: PermissionMode = "default"
    command_hooks: tuple[CommandHook, ...] = ()
    hooks_problem: str | None = None
    folder: Path | None = None
    agents: Mapping[str, AgentDefinition] = field(default_factory=dict)
    agent_problems: tuple[str, ...] = ()
    subagent_limits: tuple[int, int] = (1, 2)


def read_for_options(conversation_id: str, settings: Mapping[str, Any],
                     env: SessionEnvironment) -> OptionsRead:
    """Read what :func:`build_options` needs that blocks (the keyring, config.json, the folder).

    Blocking: call it in a worker thread. ``serve`` reads it in the call that
    stores a turn's prompt (one hand-over to a thread per start, not two).

    Raises:
        MissingApiKeyError: The conversation names a key that is not stored.
        WorkdirError: Its work folder cannot be made.
    """
    workdir = env.tools.builtin_workdir(conversation_id, settings)
    hooks, problem = env.config.command_hooks()
    folder = workdir
    if hooks and folder is None:
        folder = env.tools.workdir(conversation_id, settings)
    agents, agent_problems = _definitions(conversation_id, settings, env, folder)
    return OptionsRead(
        settings, stored_api_key(settings), conversation_environment(conversation_id),
        env.config.effective_rules(settings), workdir,
        project_instructions_for(conversation_id, settings, env.tools.workdirs_root)
        if included(settings) else None,
        offered_skills(conversation_id, settings, env.tools.workdirs_root),
        effective_mode(settings), tuple(hooks), problem, folder, agents,
        tuple(agent_problems), env.config.subagent_limits())


def offered_skills(conversation_id: str, settings: Mapping[str, Any],
                   workdirs_root: Path | None) -> list[Skill]:
    """The skills a turn offers: none when ``tools`` is ``[]``, and not those turned off.

    Blocking (reads the skill folders).
    """
    if settings.get("tools") == []:
        return []
    from desktop_agent.core.tooling.skills.skills import find_skills
    from desktop_agent.session.commands.conversation_commands import user_folder

    try:
        workdir: Path | None = workdir_path(conversation_id, settings, workdirs_root)
    except WorkdirError:
        workdir = None
    off = set(settings.get("skills_off") or ())
    return [s for s in find_skills(workdir, user_folder("skills"))[0] if s.name not in off]


def _definitions(conversation_id: str, settings: Mapping[str, Any], env: SessionEnvironment,
                 folder: Path | None) -> tuple[dict[str, AgentDefinition], list[str]]:
    """config.json's subagents, then the working folder's Markdown ones (blocking: files)."""
    from desktop_agent.core.tooling.agent_definitions import definitions_from_folder
    from desktop_agent.session.tools.tool_catalog import WorkdirError, workdir_path

    agents, problem = env.config.agent_definitions()
    problems = [problem] if problem else []
    try:
        project = folder or workdir_path(conversation_id, settings, env.tools.workdirs_root)
    except WorkdirError:
        return agents, problems
    found, unread = definitions_from_folder(project)
    return {**agents, **found}, problems + unread


def usable_agents(agents: Mapping[str, AgentDefinition], tools: list[Tool],
                  problems: list[str] | None) -> dict[str, AgentDefinition]:
    """The definitions this conversation's tools can serve; the others left out, in words.

    A conversation may offer fewer tools than a definition names (its ``tools``
    setting): that subagent is not offered here, and the person is told why.
    """
    from desktop_agent.core.tooling.agent_definitions import AgentDefinitionError

    usable: dict[str, AgentDefinition] = {}
    for name, definition in agents.items():
        try:
            definition.named(name).tools_from(tools)
        except AgentDefinitionError as exc:
            if problems is not None:
                problems.append(f"{exc} It is not offered in this conversation.")
            continue
        usable[name] = definition
    return usable

async def build_options(conversation_id: str, settings: Mapping[str, Any],
                        env: SessionEnvironment, can_use_tool: CanUseTool | None,
                        hooks: Hooks | None = None,
                        read: OptionsRead | BaseException | None = None,
                        local: LocalServerFacts | None = None,
                        previews: CommandPreviews | None = None,
                        problems: list[str] | None = None) -> AgentOptions:
    """The options of a conversation's next turn.

    What blocks (the keyring, config.json, making the work folder) runs in one
    worker thread: each hand-off to a thread costs context switches, and with 50
    turns starting at once on a small machine those were a large share of the
    start-up work; a folder made on the event loop held up every open stream.

    Raises:
        MissingApiKeyError: The conversation names a key that is not stored.
        WorkdirError: Its work folder cannot be made.
        ConfigurationError: The settings make no valid options (no model...).

    ``hooks`` replaces ``env.hooks`` (the session passes the shared ones with its own).
    ``read``: :func:`read_for_options` done already (or what it raised), used when it
    was read for these very ``settings``; read here otherwise.
    ``local``: the engine's server when the model runs on this computer: its address,
    key and model name replace the settings', and the context it really applies is
    the one requests are sized for.
    ``previews``: the bash tool's preview mode (see
    :mod:`~desktop_agent.session.files.command_previews`).
    ``problems`` gets the sentences a person should read about what was read
    (config.json's hooks unused).
    """
    from desktop_agent.core.options import AgentOptions

    if read is None or (isinstance(read, OptionsRead) and read.settings is not settings):
        read = await asyncio.to_thread(read_for_options, conversation_id, settings, env)
    elif isinstance(read, BaseException):
        raise read
    if problems is not None:
        problems += [p for p in (read.hooks_problem, *read.agent_problems) if p]
    api_key, secrets, rules, workdir, instructions = (
        read.api_key, read.secrets, read.rules, read.workdir, read.instructions)
    tools = await env.tools.tools_for(conversation_id, settings, secrets, workdir, previews)
    system_prompt = with_instructions(settings.get("system_prompt") or None, instructions)
    if read.skills:
        from desktop_agent.core.tooling.skills.skills import skill_rule, skill_tool, skills_prompt

        tools = [*tools, skill_tool(read.skills)]
        rules = [*rules, skill_rule()]
        system_prompt = "\n\n".join(p for p in (system_prompt, skills_prompt(read.skills)) if p)
    if any(t.name == PLAN_TOOL_NAME for t in tools):
        rules = [*rules, plan_rule()]  # keeping a checklist changes nothing: never asked
    agents = usable_agents(read.agents, tools, problems) if read.agents else None
    if agents:
        rules = [*rules, delegation_rule()]  # each of the subagent's own calls is asked
    s = settings
    timeout = env.approval_timeout
    base_url, model, context_length = (
        (local.base_url, local.model, local.context_length or s.get("context_length"))
        if local is not None else
        (str(s.get("base_url") or ""), str(s.get("model") or ""), s.get("context_length")))
    shared_hooks = env.hooks if hooks is None else hooks
    return AgentOptions(
        model=model,
        base_url=base_url,
        system_prompt=system_prompt,
        tools=tools,
        max_turns=None,
        max_tokens=s.get("max_tokens", defaults.DEFAULT_MAX_TOKENS),
        temperature=s.get("temperature", defaults.DEFAULT_TEMPERATURE),
        api_key=local.api_key if local is not None else api_key,
        auto_execute_tools=True,
        max_tool_iterations=int(s.get("max_tool_iterations",
                                      defaults.DEFAULT_MAX_TOOL_ITERATIONS)),
        hooks=with_command_hooks(shared_hooks, read, settings, secrets),
        permission_rules=rules,
        can_use_tool=can_use_tool,
        # The broker times out (visibly) first; the core's limit is a backstop.
        approval_timeout=None if timeout is None else timeout + defaults.APPROVAL_BACKSTOP_SECONDS,
        context_length=context_length,
        compaction=s.get("compaction") or "summarise",
        # unset: the SDK decides per server and model (core/tooling/tool_call_mode.py)
        constrained_tool_calls=constrained if isinstance(
            constrained := s.get("constrained_tool_calls"), bool) else "auto",
        tool_decision=s.get("tool_decision") is True,
        # per-conversation override of what discovery found (None: unknown)
        vision=s.get("vision") if isinstance(s.get("vision"), bool) else None,
        extra_body=dict(s.get("extra_body") or {}),
        secret_values=tuple(secrets.values()),
        connection_pool=env.connection_pool,
        permission_mode=read.permission_mode,
        agents=agents or None,
        max_subagent_depth=read.subagent_limits[0],
        max_concurrent_subagents=read.subagent_limits[1],
        session_id=conversation_id,
        cwd=str(read.folder) if read.folder is not None else None,
    )


def delegation_rule() -> PermissionRule:
    """Handing a task to a subagent changes nothing by itself: never asked (its calls are)."""
    from desktop_agent.core.tooling.permissions import PermissionRule

    return PermissionRule("delegate", "allow")


def with_command_hooks(hooks: Hooks | None, read: OptionsRead, settings: Mapping[str, Any],
                       secrets: Mapping[str, str]) -> Hooks | None:
    """``hooks`` with config.json's hook commands after them, run as the conversation's commands.

    Run last: the app's own hooks (the file-change watch) see every call first.
    """
    if not read.command_hooks or read.folder is None:
        return hooks
    from desktop_agent.core.tooling.command_hooks import command_hook_handlers, sandboxed_runner
    from desktop_agent.core.tooling.hooks import merge_hooks
    from desktop_agent.session.settings.sandbox_settings import sandbox_policy

    runner = sandboxed_runner(sandbox_policy(settings), read.folder, secrets)
    return merge_hooks(hooks, command_hook_handlers(read.command_hooks, runner))
