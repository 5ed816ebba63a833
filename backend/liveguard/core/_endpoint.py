"""Where and how to ask: :class:`JudgeConfig`, and which key may go to which host."""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from liveguard.errors import PolicyError

if TYPE_CHECKING:
    from liveguard.settings import Settings

_ENV_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "base_url": "AGENT_EVAL_BASE_URL",
        "model": "AGENT_EVAL_MODEL",
        "timeout": "AGENT_EVAL_TIMEOUT",
        "max_retries": "AGENT_EVAL_MAX_RETRIES",
        "concurrency": "AGENT_EVAL_CONCURRENCY",
        "kill_switch": "LLM_KILL_SWITCH",
        "allow_http_hosts": "AGENT_EVAL_ALLOW_HTTP_HOSTS",
    }
)
_KEY_HOSTS: Final[Mapping[str, str]] = MappingProxyType(
    {"DEEPSEEK_API_KEY": "api.deepseek.com", "OPENAI_API_KEY": "api.openai.com"}
)
"""Provider keys and the one host each is sent to. ``AGENT_EVAL_API_KEY`` goes to the
configured ``AGENT_EVAL_BASE_URL`` (default DeepSeek's API), whatever its host."""
DEFAULT_BASE_URL: Final = "https://api.deepseek.com"
NO_KEY: Final = "no-key"
"""What a keyless client sends as its bearer token (``Authorization: Bearer no-key``): the
``openai`` client needs one, and a server that takes no key ignores it."""


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def own_host(base_url: str, allow_http_hosts: Collection[str] = ()) -> bool:
    """True when ``base_url``'s host is the user's own: loopback, or named in
    ``AGENT_EVAL_ALLOW_HTTP_HOSTS`` (a server on the user's own network)."""
    host = host_of(base_url).strip("[]")
    return is_loopback(host) or host in {h.strip("[]").lower() for h in allow_http_hosts}


def plain_http_refusal(base_url: str, allow_http_hosts: Collection[str] = ()) -> str | None:
    """Why a key must not go to ``base_url`` (``http://`` to a host not the user's own), else None.

    Keys travel only over https; plain http is allowed for loopback hosts (a local server, a
    test double), where nothing crosses a network, and for the hosts the user names in
    ``AGENT_EVAL_ALLOW_HTTP_HOSTS`` (their own network).
    """
    parts = urlsplit(base_url)
    if parts.scheme.lower() == "https":
        return None
    host = parts.hostname or ""
    if parts.scheme.lower() == "http" and own_host(base_url, allow_http_hosts):
        return None
    return (f"refusing to send an API key to {base_url!r}: keys go only over https "
            f"(plain http only to loopback hosts and to those named in AGENT_EVAL_ALLOW_HTTP_HOSTS, "
            f"not {host or 'this host'!r})")


def key_for(base_url: str, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(key, env var)`` for ``base_url``: a key goes only to the host it was issued for."""
    own = env.get("AGENT_EVAL_API_KEY", "").strip()
    if own:
        return own, "AGENT_EVAL_API_KEY"
    host = host_of(base_url)
    for var, key_host in _KEY_HOSTS.items():
        value = env.get(var, "").strip()
        if value and host == key_host:
            return value, var
    return None, None


def missing_key_hint(base_url: str) -> str:
    """One line: which key is missing for which host."""
    host = host_of(base_url) or base_url
    usable = ["AGENT_EVAL_API_KEY", *(v for v, h in _KEY_HOSTS.items() if h == host)]
    others = [f"{v} is sent only to {h}" for v, h in _KEY_HOSTS.items() if h != host]
    tail = f" ({'; '.join(others)})" if others else ""
    return f"no API key for {host}: set {' or '.join(usable)}{tail}"


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class JudgeConfig(BaseModel):
    """Where and how to ask. :meth:`from_env` reads the ``AGENT_EVAL_*`` variables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(default="https://api.deepseek.com", pattern=r"^https?://\S+$")
    model: str = Field(default="deepseek-chat", min_length=1)
    api_key: SecretStr | None = None
    timeout: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    max_retries: int = Field(default=3, ge=0, le=10)
    concurrency: int = Field(default=4, ge=1)
    kill_switch: bool = False
    allow_http_hosts: tuple[str, ...] = ()
    """Hosts of the user's own network that may be reached over plain http, key or not
    (``AGENT_EVAL_ALLOW_HTTP_HOSTS``, comma-separated); loopback always may."""

    @model_validator(mode="after")
    def _key_only_over_https(self) -> JudgeConfig:
        """A key is never sent in clear text: ``http://`` only to the user's own hosts."""
        if self.api_key is not None and self.api_key.get_secret_value():
            refusal = plain_http_refusal(self.base_url, self.allow_http_hosts)
            if refusal is not None:
                raise ValueError(refusal)
        return self

    @property
    def keyless(self) -> bool:
        """No key is needed: the endpoint is on loopback or an allowed host of the user's own
        (Ollama, vLLM, LM Studio, llama.cpp's server take none by default)."""
        return own_host(self.base_url, self.allow_http_hosts)

    def client_options(self) -> dict[str, Any]:
        """``api_key`` for an ``openai`` client: the key, or (keyless) :data:`NO_KEY`, a
        placeholder that the client insists on and that servers without auth ignore.
        Call only when :meth:`skip_reason` is None."""
        key = self.api_key.get_secret_value() if self.api_key is not None else ""
        return {"api_key": key or NO_KEY}

    @classmethod
    def from_settings(cls, settings: Settings) -> JudgeConfig:
        """The judges' configuration from ``settings`` (the environment read once, at the edge)."""
        return cls.from_env(settings.env)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JudgeConfig:
        """Defaults overridden by the environment; raise :class:`PolicyError` naming a bad variable.

        The key goes only to the host it was issued for: ``AGENT_EVAL_API_KEY`` to
        ``AGENT_EVAL_BASE_URL``; ``DEEPSEEK_API_KEY`` only to api.deepseek.com;
        ``OPENAI_API_KEY`` only to api.openai.com. Empty variables count as unset.
        ``env`` is a mapping of variables (:attr:`liveguard.settings.Settings.env`; the usual
        caller is :meth:`from_settings`); this never reads the process environment.
        """
        values: dict[str, Any] = {}
        for name, var in _ENV_NAMES.items():
            raw = env.get(var, "").strip()
            if name == "kill_switch":
                if raw.lower() not in _TRUE | _FALSE:
                    raise PolicyError(f"{var}={raw!r}: expected 1 or 0")
                values[name] = raw.lower() in _TRUE
            elif name == "allow_http_hosts":
                hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
                bad = [h for h in hosts if "/" in h or (":" in h.strip("[]") and not _is_ip(h))]
                if bad:
                    raise PolicyError(f"{var}: expected host names or addresses, comma-separated "
                                      f"(no scheme, port or path), got {', '.join(map(repr, bad))}")
                values[name] = hosts
            elif raw:
                values[name] = raw
        key, _ = key_for(str(values.get("base_url") or DEFAULT_BASE_URL), env)
        if key is not None:
            values["api_key"] = key
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            parts = []
            for err in exc.errors():
                if not err["loc"]:  # the model's own check: a key over plain http
                    parts.append(f"AGENT_EVAL_BASE_URL: {str(err['msg']).removeprefix('Value error, ')}")
                    continue
                field = str(err["loc"][0])
                var = _ENV_NAMES.get(field, field)
                parts.append(f"{var}={values.get(field)!r}: {err['msg']}")
            raise PolicyError("; ".join(parts)) from None

    def skip_hint(self) -> str | None:
        """One human line on why judging is off, or None when it is on."""
        reason = self.skip_reason()
        if reason == "no_api_key":
            return missing_key_hint(self.base_url)
        return "LLM_KILL_SWITCH=1" if reason == "kill_switch" else None

    def skip_reason(self) -> str | None:
        """Why judging is off (``kill_switch``, ``no_api_key``), or None when it is on."""
        if self.kill_switch:
            return "kill_switch"
        if (self.api_key is None or not self.api_key.get_secret_value()) and not self.keyless:
            return "no_api_key"
        return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
