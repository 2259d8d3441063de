"""The read side: a database back as runs (loader, runs list, state at a step), their
steps (the step model a replay plays), and the views over steps: captions, a tool call's
life, the floor plan, the graph layout, colours, forks, diff; and what the model calls
cost in money (``cost``). Imports no LangChain."""
