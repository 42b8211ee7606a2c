"""The streams family of errors."""

from processors.commands import CommandRefusal
from processors.errors import PredigestError


class StreamsError(PredigestError):
    """The pipeline's wiring could not do what the operator asked."""


class BrokerUnavailableError(StreamsError):
    """No Kafka broker could be reached or started."""


class ConfigError(StreamsError):
    """The configuration or a command-line argument is not usable."""


class CommandRefusedError(StreamsError):
    """A close/flush command a worker would refuse (unknown axis, end out of reach …); `reason` is its code."""

    def __init__(self, reason: CommandRefusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason
