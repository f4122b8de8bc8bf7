"""Test doubles: fake Ollama / OpenAI-compatible HTTP servers.

The scripted chat model itself lives in `soothe.engine.llm.scripted`.
"""

from tests.fakes._base import FakeHTTPError, FakeReply, RecordedRequest
from tests.fakes.ollama_server import FakeOllamaModel, FakeOllamaServer
from tests.fakes.openai_server import FakeOpenAIServer

__all__ = [
    "FakeHTTPError",
    "FakeOllamaModel",
    "FakeOllamaServer",
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
]
