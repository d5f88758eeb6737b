"""The Celery app. Broker and eager mode come from settings (REDIS_URL)."""

import logging
import os

from celery import Celery
from celery.signals import (
    beat_init,
    celeryd_init,
    task_postrun,
    task_prerun,
    worker_ready,
    worker_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casino.settings")

app = Celery("casino")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@celeryd_init.connect
@beat_init.connect
def _worker_limits(**kwargs) -> None:
    """A worker or beat takes the workers' database limits (report builds and
    re-audits run long statements; casino/dbsession.py), before its pool
    processes start and open their connections."""
    from .dbsession import use

    use("worker")


@worker_ready.connect
def _heartbeat_start(sender=None, **kwargs) -> None:
    """The worker's heartbeat in Redis, read by the health check
    (casino/health.py): from the main process, whatever its pool does."""
    from .health import worker_heartbeat_start

    try:  # the queues this worker takes (-Q; none given: every queue)
        queues = sorted(sender.app.amqp.queues.consume_from)
    except AttributeError:
        queues = []
    worker_heartbeat_start(getattr(sender, "hostname", None) or "worker", queues)


@worker_shutdown.connect
def _heartbeat_stop(**kwargs) -> None:
    from .health import worker_heartbeat_stop

    worker_heartbeat_stop()


@task_prerun.connect
def _task_logs(task_id=None, **kwargs) -> None:
    """A task's log lines carry its id as their request_id (casino/logs.py)."""
    from .logs import task_context_start

    task_context_start(task_id)


@task_postrun.connect
def _task_logs_end(task_id=None, **kwargs) -> None:
    from .logs import task_context_end

    task_context_end(task_id)

# A web request that sends a task (a report, a re-audit) must answer at once:
# with Redis unreachable, 503 and the job kept queued for the sweep
# (reports.dispatch_pending). Celery's defaults held the request ~19 s (the
# Redis result backend retries its connection 20 times, a second apart, to
# subscribe to a result nobody reads) or for ever (a Redis that accepts and
# never answers: no socket timeout). So `publish` sends on a connection of its
# own with short socket timeouts, retries once at once (a connection the
# server dropped since), and asks for no result (the job's row is its state),
# so the result backend is not touched. Workers keep Celery's patient defaults.
PUBLISH_TIMEOUT = 0.3  # seconds per connect or read; two tries at most
PUBLISH_TRANSPORT = {
    "socket_connect_timeout": PUBLISH_TIMEOUT,
    "socket_timeout": PUBLISH_TIMEOUT,
}
PUBLISH_RETRY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0,
    "interval_max": 0,
}


def by_name(name: str, *args):
    """A task's signature by its registered name: services hand work to
    Celery this way and never import the task modules, which sit on top of
    them (README, "Layout"); the name is the contract, and a worker (or eager
    mode here) resolves it to the task. The apps' task modules are imported
    the first time (as a worker does at start; autodiscovery waits for
    that), so an unknown name fails loudly (NotRegistered) in the caller."""
    if name not in app.tasks:
        app.loader.import_default_modules()
    app.tasks[name]  # noqa: B018 - NotRegistered for a name no app defines
    return app.signature(name, args=args, immutable=True)


def publish(signature) -> str:
    """Send one task (a signature) now and return its id, or raise (kombu's
    OperationalError) within about 2 × PUBLISH_TIMEOUT if Redis is down or
    hung. Eager (no Redis): run it here, as apply_async does."""
    if app.conf.task_always_eager:
        return signature.apply_async().id
    with app.connection_for_write(transport_options=PUBLISH_TRANSPORT) as conn:
        result = signature.apply_async(
            connection=conn,
            retry=True,
            retry_policy=PUBLISH_RETRY,
            ignore_result=True,
        )
    return result.id


# -- what a message may ask ------------------------------------------------------
# A message on the broker is not authority: whoever can write Redis can put one
# there, with any registered task's name and any arguments (Celery's own
# canvas tasks only call registered tasks in turn). So each task takes ids and
# re-reads what to do from rows the trail seals (a report job), or takes
# arguments from a fixed set (an anchor's reason, a report's format, a cut-off
# hour); anything else is refused here, logged, and does nothing.
log = logging.getLogger("casino.tasks")


def message_refused(task: str, why: str) -> dict:
    """Log a message that asks for what no sender of ours sends (a forged or
    malformed one) and say what was refused; the task then does nothing."""
    log.warning("task %s refused: %s (a message forged on the broker?)", task,
                why[:300])
    return {"refused": why[:300]}


def is_id(value) -> bool:
    return type(value) is int and 0 < value < 2**63


def is_hour(value) -> bool:
    return value is None or (type(value) is int and 0 <= value <= 23)
