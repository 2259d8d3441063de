"""The vocabulary both sides share: the six hooks, the event records and their typed
payloads, the loop as a graph, content as text, redaction, words, terminal text, HTTP
bodies, provider and middleware names. Imports no LangChain and nothing else of looptrace."""
