"""The config's error and warning classes, in a module of their own so that a section's
validation (memsim.nda, memsim.ecc...) can raise them without importing memsim.config,
which imports those modules (imports go one way: config -> sections). memsim.config
re-exports both; catch them as ``memsim.config.ConfigError``."""


class ConfigError(ValueError):
    """A config key or value is wrong; the message names the key path."""


class ConfigWarning(UserWarning):
    """A config that loads but probably does not mean what it says (the message names
    the key path); ``memsim`` prints it as ``memsim: warning: ...``."""
