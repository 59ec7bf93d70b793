"""Errors raised by the client, one class per error code of the HTTP API."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Type


class HindsightError(Exception):
    """A request the node refused, or one that never got an answer.

    ``code`` is the API's snake-case error code (``"not_found"``), ``message`` the node's reason and
    ``status`` the HTTP status (``None`` when no answer arrived).
    """

    code: str = "unknown"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status}, " if self.status is not None else ""
        return f"{self.message} ({where}{self.code})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"message={self.message!r})"
        )


class InvalidArgument(HindsightError):
    code = "invalid_argument"


class OutOfRange(InvalidArgument):
    code = "out_of_range"


class Unauthenticated(HindsightError):
    code = "unauthenticated"


class PermissionDenied(HindsightError):
    code = "permission_denied"


class NotFound(HindsightError):
    code = "not_found"


class AlreadyExists(HindsightError):
    code = "already_exists"


class FailedPrecondition(HindsightError):
    code = "failed_precondition"


class Aborted(HindsightError):
    """A concurrent change got in the way; the request may succeed if sent again."""

    code = "aborted"


class PayloadTooLarge(HindsightError):
    code = "payload_too_large"


class UnsupportedMediaType(HindsightError):
    code = "unsupported_media_type"


class RateLimited(HindsightError):
    """Over the key's request rate; ``retry_after`` is the wait in seconds when the node said."""

    code = "resource_exhausted"

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class Unavailable(HindsightError):
    """The node cannot serve now (no leader, not ready) or could not be reached at all."""

    code = "unavailable"


class Cancelled(HindsightError):
    code = "cancelled"


class DeadlineExceeded(HindsightError):
    """No answer within the client's timeout; the request may still have been applied."""

    code = "deadline_exceeded"


class Unimplemented(HindsightError):
    """The node does not serve this route or method (an older version)."""

    code = "unimplemented"


class Internal(HindsightError):
    code = "internal"


class DataLoss(Internal):
    """A record failed its integrity check and was withheld."""

    code = "data_loss"


_BY_CODE: Dict[str, Type[HindsightError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        OutOfRange,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        AlreadyExists,
        FailedPrecondition,
        Aborted,
        PayloadTooLarge,
        UnsupportedMediaType,
        RateLimited,
        Unavailable,
        Cancelled,
        DeadlineExceeded,
        Unimplemented,
        Internal,
        DataLoss,
    )
}

# For answers without a readable error body (a proxy's HTML page, an empty 502), so the caller still
# gets the class its retry logic looks for.
_BY_STATUS: Dict[int, Type[HindsightError]] = {
    400: InvalidArgument,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    409: FailedPrecondition,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    504: DeadlineExceeded,
    500: Internal,
    501: Unimplemented,
}


_RETRY_IN = re.compile(r"retry in (\d+(?:\.\d+)?) ?(ms|s)\b")


def error_from_response(
    status: int, body: Any, text: str = "", headers: Optional[Dict[str, str]] = None
) -> HindsightError:
    """The exception for an error answer: by its ``code``, else by its HTTP status."""
    code: Optional[str] = None
    message: Optional[str] = None
    if isinstance(body, dict):
        if isinstance(body.get("code"), str):
            code = body["code"]
        if isinstance(body.get("message"), str):
            message = body["message"]
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status, HindsightError)
    if message is None:
        message = text.strip()[:500] or f"HTTP {status}"
    if code is None:
        code = cls.code if cls is not HindsightError else f"http_{status}"
    if cls is RateLimited:
        retry_after: Optional[float] = None
        raw = (headers or {}).get("retry-after")
        if raw:
            try:
                retry_after = float(raw)
            except ValueError:
                retry_after = None
        if retry_after is None:
            # The node states the wait only in its message ("retry in 1954 ms").
            said = _RETRY_IN.search(message)
            if said:
                retry_after = float(said.group(1)) / (1000.0 if said.group(2) == "ms" else 1.0)
        return RateLimited(message, code=code, status=status, body=body, retry_after=retry_after)
    return cls(message, code=code, status=status, body=body)


__all__ = [
    "HindsightError",
    "InvalidArgument",
    "OutOfRange",
    "Unauthenticated",
    "PermissionDenied",
    "NotFound",
    "AlreadyExists",
    "FailedPrecondition",
    "Aborted",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "RateLimited",
    "Unavailable",
    "Cancelled",
    "DeadlineExceeded",
    "Unimplemented",
    "Internal",
    "DataLoss",
    "error_from_response",
]
