"""Protocol-faithful fake engines on loopback, one per protocol Brim speaks.

    from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeSglang, FakeVllm

    with FakeLlamaServer(n_ctx=4096, slots=2) as srv:
        srv.url                      # http://127.0.0.1:<random port>
        srv.script_reply("Hi there.", token_delay=0.01)
        srv.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "notes.md"})])
        srv.script_reply(fail="die", fail_after=2)
        srv.responder = lambda request: Reply(text="...")   # when the script is empty
        srv.chat_requests            # every chat request: .body, .prompt_tokens, .window, ...
        srv.requests                 # every request, any path
        srv.wait_for_disconnect(2)   # the client abandoned a stream

Each fake counts prompts with a real BPE vocabulary, so counts depend on content as on a real
engine. llama-server and Ollama serve the bundled model, and count with its own vocabulary
and template (`smollm2_vocab`: SmolLM2's GGUF through llama.cpp's tokenizer, its template
through jinja2, none of Brim's counting code); the functions exported here are those. vLLM
serves a Qwen whose vocabulary Brim cannot open, stood in for by `fake_tokenizer` (cl100k,
Qwen 2.5's ChatML), and SGLang a Llama, `fake_llama3` (cl100k under Llama 3.1's template,
whose per-message counts do not add up to the request's); tests compute their expectations
with the same functions. Details per engine: `fake_ollama`,
`fake_openai` (llama-server), `fake_vllm` (vLLM, SGLang), and the shared machinery (replies,
failures, recording) in `fake_http`.
"""

from tests.helpers.fake_http import (
    FakeServer,
    FakeToolCall,
    RecordedRequest,
    Reply,
)
from tests.helpers.fake_ollama import FakeOllama, OllamaModel
from tests.helpers.fake_openai import FakeLlamaServer, FakeOpenAIServer
from tests.helpers.fake_vllm import FakeSglang, FakeVllm
from tests.helpers.smollm2_vocab import count_chat, count_text, render_chat, tokenize

__all__ = [
    "FakeLlamaServer",
    "FakeOllama",
    "FakeOpenAIServer",
    "FakeServer",
    "FakeSglang",
    "FakeToolCall",
    "FakeVllm",
    "OllamaModel",
    "RecordedRequest",
    "Reply",
    "count_chat",
    "count_text",
    "render_chat",
    "tokenize",
]
