"""The seed's ``open_agent.config``: resolve model and server from the environment.

See :mod:`desktop_agent.core.servers.endpoint_config` for the order of resolution.
"""

from __future__ import annotations

from desktop_agent.core.servers.endpoint_config import (
    BASE_URL_ENV_VARS,
    DEFAULT_PROVIDER,
    MODEL_ENV_VARS,
    PROVIDER_DEFAULTS,
    get_base_url,
    get_model,
    provider_url,
)

__all__ = ["BASE_URL_ENV_VARS", "DEFAULT_PROVIDER", "MODEL_ENV_VARS", "PROVIDER_DEFAULTS",
           "get_base_url", "get_model", "provider_url"]
