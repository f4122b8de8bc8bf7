"""Test doubles: fake Ollama / OpenAI-compatible HTTP servers.

The scripted chat model itself lives in `soothe.engine.llm.scripted`.
"""

from tests.fakes._base import FakeHTTPError, FakeReply, RecordedRequest
from tests.fakes.ollama_server import ChatRecord, FakeOllamaModel, FakeOllamaServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.text_calls import TEXT_CALL_SHAPES, text_call

__all__ = [
    "TEXT_CALL_SHAPES",
    "ChatRecord",
    "FakeHTTPError",
    "FakeOllamaModel",
    "FakeOllamaServer",
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "text_call",
]
