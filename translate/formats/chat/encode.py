"""The Chat Completions encoder (placeholder until the real one lands)."""

from __future__ import annotations

from .._base import Encoder

__all__ = ["ChatEncoder"]


class ChatEncoder(Encoder):
    """Not implemented yet."""

    format = "chat"
