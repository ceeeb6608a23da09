"""Workers on sbredis queues: the native processor (:class:`Worker`) and a thin task registry (:class:`App`).

    from sbredis.worker import Worker

    def handle(message):          # a ServiceBusReceivedMessage; may also be `async def`
        print(str(message))       # return: completed; raise: abandoned (or dead-lettered)

    Worker("redis://127.0.0.1:6379/0", handle, entity="orders", concurrency=8).run()

The same from the command line: ``sbredis worker myapp.handlers:handle --entity orders
--concurrency 8`` (``sbredis worker --help`` lists the options and exit codes).
``subscription=`` (``--subscription``) processes a topic subscription; ``session=True``
(``--session``) processes an entity that requires sessions: up to ``concurrency`` sessions at
once, each one message at a time in order.
"""

from ._app import App, Task
from ._middleware import Middleware
from ._processor import DeadLetter, ExitCode, Worker
from ._retry import Retry, RetryAfter

__all__ = ["App", "DeadLetter", "ExitCode", "Middleware", "Retry", "RetryAfter", "Task", "Worker"]
