"""Python client for the Hindsight memory service's HTTP/JSON API.

    from hindsight_client import HindsightClient

    with HindsightClient("http://127.0.0.1:7401") as hs:
        hs.write("acme/agent-7", "The user prefers answers in French.", source="user")
        for hit in hs.recall("acme/agent-7", "Which language should I answer in?"):
            print(hit.score, hit.memory.content, hit.explain.arms)
"""

from .client import (
    DEFAULT_BASE_URL,
    AsyncBanks,
    AsyncHindsightClient,
    AsyncKeys,
    Banks,
    HindsightClient,
    Keys,
    __version__,
)
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors
from .models import *  # noqa: F401,F403
from .models import __all__ as _models

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncBanks",
    "AsyncHindsightClient",
    "AsyncKeys",
    "Banks",
    "HindsightClient",
    "Keys",
    "__version__",
    *_errors,
    *_models,
]
