"""Domain errors. Each carries a message a person can act on; the API maps them to status codes."""


class ServiceError(Exception):
    status_code = 400

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.message = message
        # Facts a client acts on, answered beside ``detail`` (the sequence a gap expected).
        self.fields = fields


class InvalidInput(ServiceError):
    status_code = 422


class ContentTooLarge(ServiceError):
    status_code = 413


class NotFound(ServiceError):
    status_code = 404


class StateConflict(ServiceError):
    status_code = 409


class SequenceGap(StateConflict):
    """An append's ``sequence`` is past the session's ``next_sequence``: the client lost a batch
    it believes was sent. Nothing was stored; the answer says where to resume."""

    def __init__(self, sequence: int, expected: int) -> None:
        super().__init__(
            f"sequence {sequence:,} is past this session's next_sequence {expected:,}: "
            f"messages {expected:,} to {sequence - 1:,} never arrived. Nothing was stored; "
            f"send again from sequence {expected:,}.",
            expected_sequence=expected,
            next_sequence=expected,
        )
