"""One-line domain errors. The CLI and the app turn them into clean messages."""


class LooptraceError(Exception):
    """Base class for every error looptrace reports to a user."""


class NotALooptraceDatabase(LooptraceError):
    """The file is not SQLite, or is SQLite written by something else."""


class DatabaseUnavailable(LooptraceError):
    """The database cannot be opened or written right now (locked, read-only, missing dir)."""


class NewerSchemaError(LooptraceError):
    """The database was written by a newer looptrace."""


class TraceFileError(LooptraceError):
    """An exported trace file is malformed."""


class RunNotFound(LooptraceError):
    """No run with that id."""


class OtlpFormatError(TraceFileError, ValueError):
    """An OTLP request or file is malformed (not protobuf/JSON OTLP, bad ids ...)."""


class OtelUnavailable(LooptraceError):
    """The optional OpenTelemetry packages are not installed (``looptrace[otel]``)."""


class OtlpExportError(LooptraceError):
    """An OTLP endpoint refused the spans or could not be reached."""


class UsageError(LooptraceError):
    """A command's options do not fit together (or a server cannot start with them)."""


class ReplayError(LooptraceError):
    """A run cannot be replayed or forked as asked (no recorded input, a step out of
    range, an edit the step cannot take, an agent factory that cannot be imported)."""


class ReplayDiverged(ReplayError):
    """A replayed agent asked for something its record does not hold, before the fork."""


class DatabaseFull(DatabaseUnavailable):
    """The disk (or the file's size limit) is full: nothing was written."""


class RunConflict(LooptraceError):
    """A run id to import is already stored with other content."""
