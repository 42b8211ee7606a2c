"""The streams family of errors."""

from processors.errors import PredigestError


class StreamsError(PredigestError):
    """The pipeline's wiring could not do what the operator asked."""


class BrokerUnavailableError(StreamsError):
    """No Kafka broker could be reached or started."""


class ConfigError(StreamsError):
    """The configuration or a command-line argument is not usable."""
