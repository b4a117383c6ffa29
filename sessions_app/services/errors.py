"""Domain errors. Each carries a message a person can act on; the API maps them to status codes."""


class ServiceError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(ServiceError):
    status_code = 422


class ContentTooLarge(ServiceError):
    status_code = 413


class NotFound(ServiceError):
    status_code = 404


class StateConflict(ServiceError):
    status_code = 409
