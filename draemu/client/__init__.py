"""The API client every component uses (rule one: only the apiserver touches the store).

`Client` speaks REST, `Informer` keeps a cache current by list+watch, `WorkQueue` feeds
reconcile loops.
"""

from draemu.client.config import ConfigError, Connection
from draemu.client.events import EventRecorder
from draemu.client.factory import SharedInformers
from draemu.client.informer import Informer, key_of
from draemu.client.rest import ApiError, Client, resource_path, wait_ready
from draemu.client.workqueue import ShutDown, WorkQueue

__all__ = ["ApiError", "Client", "ConfigError", "Connection", "EventRecorder", "Informer",
           "SharedInformers", "ShutDown", "WorkQueue", "key_of", "resource_path",
           "wait_ready"]
