"""Hindsight for agent frameworks.

- ``hindsight_client.adapters.langgraph.HindsightStore``: a LangGraph store
  (``pip install "hindsight-client[langgraph]"``).
- ``hindsight_client.adapters.agents.HindsightMemory``: memory for an agent loop: instructions
  context, ``save_memory``/``search_memory`` tools and feedback; plain Python, with
  ``as_function_tools()`` for the OpenAI Agents SDK (``pip install "hindsight-client[agents]"``).

Each is imported on first use, so that a missing framework only matters to its own adapter.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HindsightMemory", "HindsightStore", "namespace_to_bank"]


def __getattr__(name: str) -> Any:
    if name in ("HindsightStore", "namespace_to_bank"):
        from . import langgraph

        return getattr(langgraph, name)
    if name == "HindsightMemory":
        from .agents import HindsightMemory

        return HindsightMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
