"""``looptrace mcp``: the Model Context Protocol server over a database, and its
what-if tools."""
