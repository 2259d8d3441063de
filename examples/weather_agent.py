"""The workshop's weather agent (docs/guide/workshop.md, step 7): a plain ``create_agent``
agent on OpenAI's chat model, pointed at ``looptrace proxy --provider openai --emulate
weather``. No tracer in its code: ``looptrace debug -- python examples/weather_agent.py``
adds one. Its tool is the one the emulator's ``weather`` script asks for: ``get_weather``
with a ``city``, called for Oslo and Bergen at once.

The base URL is ``$OPENAI_BASE_URL`` (the proxy prints it), else the proxy on port 8080.
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return {"Oslo": "Light snow, -3°C, wind 4 m/s from the north."}.get(
        city, f"Sunny, 21°C in {city}.")


model = ChatOpenAI(
    model="gpt-4o-mini",
    base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
    api_key="sk-emulated-weather-0001",  # (the emulator needs no real key)
)
agent = create_agent(model, tools=[get_weather],
                     system_prompt="You are a helpful weather assistant. Use the tools.")

if __name__ == "__main__":
    out = agent.invoke({"messages": [("user", "What's the weather in Oslo and in Bergen right now?")]})
    print(out["messages"][-1].content)
