"""The ground every part stands on: configuration (with the Hermes config reader), logs, errors,
metrics instruments, storage helpers and middleware. It imports no part of the service, so any
part may import it; ``hermes_site`` is the roof above them all."""
