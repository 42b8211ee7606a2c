"""The streams family of errors: no broker, an unusable configuration, a refused command, a stop signal; each
message one line that tells the operator what to do."""

import signal

from processors.commands import CommandRefusal
from processors.errors import PredigestError


class StreamsError(PredigestError):
    """The pipeline's wiring could not do what the operator asked."""


class BrokerUnavailableError(StreamsError):
    """No Kafka broker could be reached or started."""


class SendRefusedError(StreamsError):
    """Kafka refused, or did not acknowledge, records a command sent (a batch over the topic's size, a timeout)."""


class ConfigError(StreamsError):
    """The configuration or a command-line argument is not usable."""


class StoppedBySignalError(StreamsError):
    """SIGINT or SIGTERM stopped a command; what it started was stopped too (or `what` says otherwise). Exits
    with 128 + the signal."""

    def __init__(self, signum: int, what: str = "; what it started is stopped") -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}{what}")
        self.signum = signum


class TerminatedError(SystemExit):
    """SIGTERM before a command installed its own handler. A SystemExit (143): no `except Exception` takes it for a
    failure, asyncio re-raises it from any task or callback, and uncaught it exits 143 without a traceback."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


class CommandRefusedError(StreamsError):
    """A close/flush command a worker would refuse (unknown axis, end out of reach …); `reason` is its code."""

    def __init__(self, reason: CommandRefusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason
