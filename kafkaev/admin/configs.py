"""Configs of topics, brokers and groups: describe them, alter them incrementally (KIP-339).

A broker's own configs live on that broker, so a BROKER or BROKER_LOGGER resource naming a
node id is asked of that node; every other resource (and the cluster-wide broker default, the
BROKER resource named "") goes to the controller's side of the cluster.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from .core import AdminCore, Gather, ResultCallback, check_items, error_or_none, gathered, send_request

Result = TypeVar("Result")  # one resource's answer


class ConfigResourceType(enum.IntEnum):
    """What a config belongs to (Java's ConfigResource.Type)."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    """Where a config's value comes from (DescribeConfigs' ConfigSource)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class AlterConfigOpType(enum.IntEnum):
    """What an incremental change does to a config (IncrementalAlterConfigs' ConfigOperation)."""

    SET = 0
    DELETE = 1  # back to its default
    APPEND = 2  # add to a list config
    SUBTRACT = 3  # remove from a list config


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A topic (by name), a broker (by node id as a string; "" for the cluster-wide default),
    a broker's loggers, or a group."""

    type: ConfigResourceType
    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.type, ConfigResourceType):
            object.__setattr__(self, "type", _resource_type(self.type))
        if not isinstance(self.name, str):
            raise TypeError(f"kafkaev.ConfigResource: 'name' must be a str, got {type(self.name).__name__}")
        if not self.name and self.type is not ConfigResourceType.BROKER:
            raise ValueError(f"kafkaev.ConfigResource: 'name' of a {self.type.name} must not be empty")

    def node_id(self) -> int | None:
        """The broker holding this resource's configs, or None when any broker can answer."""
        if self.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) and self.name.isdigit():
            return int(self.name)
        return None


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """A value the config would take from another source (include_synonyms=True)."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None  # None for a sensitive config
    source: ConfigSource
    is_read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: int = 0  # DescribeConfigs' ConfigType (1 boolean ... 9 password); 0 unknown
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class ConfigDescription:
    """One resource's configs by name, or the error that kept them back."""

    resource: ConfigResource
    entries: Mapping[str, ConfigEntry] = field(default_factory=dict)
    error: KafkaError | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One incremental change: ``SET`` name to value, ``DELETE`` it (back to its default),
    ``APPEND`` to or ``SUBTRACT`` from a list config."""

    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"kafkaev.AlterConfigOp: 'name' must be a non-empty string, got {self.name!r}")
        try:
            object.__setattr__(self, "op", AlterConfigOpType(self.op))
        except ValueError:
            raise ValueError(f"kafkaev.AlterConfigOp: 'op' must be an AlterConfigOpType, got {self.op!r}") from None
        if self.op is not AlterConfigOpType.DELETE and not isinstance(self.value, str):
            raise ValueError(f"kafkaev.AlterConfigOp: {self.op.name} of {self.name!r} needs a str 'value'")


def _resource_type(value: int) -> ConfigResourceType:
    try:
        return ConfigResourceType(value)
    except ValueError:
        raise ValueError(f"kafkaev.ConfigResource: 'type' must be a ConfigResourceType, got {value!r}") from None


def _by_node(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
    groups: dict[int | None, list[ConfigResource]] = {}
    for resource in resources:
        groups.setdefault(resource.node_id(), []).append(resource)
    return groups


def _entry(c: codec.DescribeConfigsResourceResult) -> ConfigEntry:
    synonyms = tuple(ConfigSynonym(s.name, s.value, _source(s.source)) for s in c.synonyms or ())
    return ConfigEntry(c.name, c.value, _source(c.config_source), c.read_only, c.is_sensitive, synonyms,
                       c.config_type, c.documentation)


def _source(code: int) -> ConfigSource:
    try:
        return ConfigSource(code)
    except ValueError:  # a source newer than this client
        return ConfigSource.UNKNOWN


class ConfigAdmin(AdminCore):
    """Config administration."""

    def _per_node(self, resources: list[ConfigResource], done: ResultCallback[dict[ConfigResource, Result]],
                  send: Callable[[Connection, list[ConfigResource], Gather[dict[ConfigResource, Result]]], None]
                  ) -> None:
        """``send(conn, resources, gather)`` once per broker the resources belong to."""
        groups = _by_node(resources)

        def merge(parts: list[dict[ConfigResource, Result]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {r: v for part in parts for r, v in part.items()}, err)

        gather = Gather[dict[ConfigResource, Result]](len(groups), merge)
        for node, group in groups.items():
            go = _bind(send, group, gather)
            if node is None:
                self._on_controller(lambda _r, e: gather.fail(e), go)
            else:
                self._on_node(node, lambda _r, e: gather.fail(e), go)

    def describe_configs(self, resources: Iterable[ConfigResource],
                         cb: ResultCallback[dict[ConfigResource, ConfigDescription]], *,
                         include_synonyms: bool = False, include_documentation: bool = False) -> None:
        """``cb({ConfigResource: ConfigDescription}, err)``: every config of each resource."""
        wanted = check_items("resources", resources, ConfigResource)
        done = self._once(cb)

        def send(conn: Connection, group: list[ConfigResource],
                 gather: Gather[dict[ConfigResource, ConfigDescription]]) -> None:
            known: dict[tuple[int, str], ConfigResource] = {(r.type, r.name): r for r in group}

            def on_response(resp: codec.DescribeConfigsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    gather.fail(err)
                    return
                found = {}
                for result in resp.results:
                    resource = known.get((result.resource_type, result.resource_name)) or ConfigResource(
                        _resource_type(result.resource_type), result.resource_name)
                    failure = error_or_none(result.error_code, result.error_message)
                    entries = {} if failure else {c.name: _entry(c) for c in result.configs}
                    found[resource] = ConfigDescription(resource, entries, failure)
                gather.add(found)

            requested = [codec.DescribeConfigsResource(resource_type=r.type, resource_name=r.name,
                                                       configuration_keys=None) for r in group]
            conn.describe_configs(requested, on_response, include_synonyms=include_synonyms,
                                  include_documentation=include_documentation)

        self._per_node(wanted, done, send)

    def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
                                  cb: ResultCallback[dict[ConfigResource, KafkaError | None]], *,
                                  validate_only: bool = False) -> None:
        """Apply each resource's changes, leaving its other configs as they are:
        ``cb({ConfigResource: KafkaError | None}, err)``, None where they were applied."""
        if not isinstance(changes, Mapping):
            raise TypeError(f"kafkaev.Admin: 'changes' must be a mapping, got {type(changes).__name__}")
        ops = {resource: check_items(f"changes[{resource}]", values, AlterConfigOp)
               for resource, values in zip(check_items("changes", changes, ConfigResource), changes.values(), strict=True)}
        done = self._once(cb)

        def send(conn: Connection, group: list[ConfigResource],
                 gather: Gather[dict[ConfigResource, KafkaError | None]]) -> None:
            known: dict[tuple[int, str], ConfigResource] = {(r.type, r.name): r for r in group}

            on_response = gathered(codec.IncrementalAlterConfigsResponse, gather, lambda resp: {
                known.get((r.resource_type, r.resource_name)) or ConfigResource(
                    _resource_type(r.resource_type), r.resource_name): error_or_none(r.error_code, r.error_message)
                for r in resp.responses})

            body = codec.IncrementalAlterConfigsRequest(resources=[codec.AlterConfigsResource(
                resource_type=r.type, resource_name=r.name,
                configs=[codec.AlterableConfig(name=o.name, config_operation=o.op, value=o.value) for o in ops[r]])
                for r in group], validate_only=bool(validate_only))
            send_request(conn, body, codec.IncrementalAlterConfigsResponse, on_response)

        self._per_node(list(ops), done, send)


def _bind(send: Callable[[Connection, list[ConfigResource], Gather[Result]], None], group: list[ConfigResource],
          gather: Gather[Result]) -> Callable[[Connection], None]:
    return lambda conn: send(conn, group, gather)

