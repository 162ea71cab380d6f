"""One config path: ``icetide.yaml`` → typed frozen model → ``ICETIDE_<SECTION>__<KEY>`` overlay.

The model rejects unknown keys and names the file and the key. Secrets (passwords,
tokens) are accepted only from the environment, never from YAML, and are held as
``SecretStr`` so they never show up in logs or reprs.

``ICETIDE_HOME`` chooses where embedded state (warehouse, checkpoints, broker data,
logs) lives; the default is ``./.icetide``.

The parts: :mod:`.durations` (the one duration type), :mod:`.sections` (the models),
:mod:`.loading` (YAML, the environment overlay, :func:`load_settings`), :mod:`.invalid`
(every pydantic validation error, here and in the pipelines, sources and tables, worded
as one message).
"""

from icetide.config.durations import Duration, parse_duration
from icetide.config.loading import (
    DEFAULT_CONFIG_FILE,
    ENV_PREFIX,
    KAFKA_PROPS,
    SECRET_KEYS,
    env_name,
    env_overlay,
    load_settings,
)
from icetide.config.sections import (
    DRIVER_ONLY,
    CatalogConfig,
    DashboardConfig,
    FlowsConfig,
    JarsConfig,
    KafkaConfig,
    MaintenanceConfig,
    MetastoreConfig,
    PythonEnvConfig,
    S3Config,
    Settings,
    SparkConfig,
    SqlServerConfig,
    TrinoConfig,
)

__all__ = [
    "DEFAULT_CONFIG_FILE", "DRIVER_ONLY", "ENV_PREFIX", "KAFKA_PROPS", "SECRET_KEYS",
    "CatalogConfig", "DashboardConfig", "Duration", "FlowsConfig", "JarsConfig",
    "KafkaConfig", "MaintenanceConfig", "MetastoreConfig", "PythonEnvConfig", "S3Config",
    "Settings", "SparkConfig", "SqlServerConfig", "TrinoConfig", "env_name", "env_overlay",
    "load_settings", "parse_duration",
]
