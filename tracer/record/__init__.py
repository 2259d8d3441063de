"""The write side: hooks and callbacks to the writer. ``TraceMiddleware``, the callback
handler, the onion's layers, the run bookkeeping, the whole state's keys, LangGraph
store writes, the invocation watcher, tracing with no code change, runs seen from outside.
Never imports the read side."""
