"""Engine text and numbers at the provider boundary: a surrogate pair split across stream
events is joined, a lone half becomes U+FFFD, whatever the cut; a token count or window
no engine can mean is refused or ignored; the wire guard passes a UTF-8 character cut
across network chunks and refuses bytes that are not UTF-8 and lines that never end."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.providers.base import ChatOptions, TextDelta, ToolCallsReady
from engine.providers.classify import MAX_TOKEN_COUNT, BadCount, as_count, as_window
from engine.providers.embedded import EmbeddedProvider
from engine.providers.engine_text import StreamText, clean, clean_arguments
from engine.providers.vllm import VllmProvider
from engine.providers.wire import GuardedStream, WireError
from tests.helpers.fake_engines import FakeVllm

# Any code point, surrogate halves and NUL included: what JSON's \u escapes can deliver.
code_points = st.integers(0, 0x10FFFF).map(chr)
engine_strings = st.lists(code_points, max_size=12).map("".join)


def _utf16_units(text: str) -> list[str]:
    """`text` as its UTF-16 code units, each a one-character str (halves as surrogates)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(data), 2)]


def _feed(pieces: list[str]) -> str:
    decoder = StreamText()
    return "".join(decoder.feed(p) for p in pieces) + decoder.flush()


@given(
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00")), cuts=st.data()
)
def test_text_cut_anywhere_between_code_units_comes_out_exactly_as_it_went_in(text, cuts):
    units = _utf16_units(text)
    points = sorted(cuts.draw(st.sets(st.integers(0, len(units)))))
    bounds = [0, *points, len(units)]
    pieces = ["".join(units[a:b]) for a, b in itertools.pairwise(bounds)]
    assert _feed(pieces) == text


@given(pieces=st.lists(engine_strings, max_size=6))
def test_whatever_an_engine_streams_the_text_is_encodable_and_as_if_sent_whole(pieces):
    out = _feed(pieces)
    out.encode("utf-8")  # never raises: nothing unpaired survives
    assert out == clean("".join(pieces))
    assert "\x00" not in out


def test_an_emoji_split_across_two_events_is_one_emoji_and_a_lone_half_is_a_replacement():
    assert _feed(["I am ", "\ud83d", "\ude00", " happy"]) == "I am \U0001f600 happy"
    assert _feed(["bad ", "\ud800", " char"]) == "bad \ufffd char"
    assert _feed(["cut at the end \ud83d"]) == "cut at the end \ufffd"
    assert _feed(["\ude00 a low half first"]) == "\ufffd a low half first"


@pytest.mark.parametrize("value", [-1, 2.5, 1e308, MAX_TOKEN_COUNT + 1, "12a", [3], True])
def test_a_token_count_no_tokenizer_can_produce_is_refused_with_its_field(value):
    with pytest.raises(BadCount, match=r"usage\.prompt_tokens"):
        as_count(value, "usage.prompt_tokens")


def test_a_real_token_count_and_an_absent_one_are_read_as_they_are():
    assert [as_count(v, "f") for v in (None, 0, 12, 12.0, "12")] == [None, 0, 12, 12, 12]


@pytest.mark.parametrize("window", [-5, 0, 1e308, 10**30])
@pytest.mark.anyio
async def test_a_window_an_engine_cannot_serve_is_not_believed(window, anyio_backend):
    with FakeVllm("Qwen/Qwen2.5-7B-Instruct", max_model_len=4096) as fake:
        fake.max_model_len = window
        provider = VllmProvider(fake.url)
        try:
            report = await provider.report("Qwen/Qwen2.5-7B-Instruct")
        finally:
            await provider.aclose()
    assert report.served is None
    assert as_window(4096) == 4096


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _through(chunks: list[bytes], max_line: int | None = 64) -> bytes:
    async def read() -> bytes:
        stream = GuardedStream(_Chunks(chunks), max_line=max_line)
        return b"".join([chunk async for chunk in stream])

    return asyncio.run(read())


def test_a_character_cut_across_network_chunks_passes_the_wire_guard_unchanged():
    chunks = [b'data: {"content": "caf\xc3', b"\xa9 \xf0\x9f", b'\x98\x80"}\n\n']
    assert _through(chunks) == b"".join(chunks)


@pytest.mark.parametrize(
    ("chunks", "says"),
    [
        ([b"data: caf\xe9\n\n"], "not UTF-8"),
        ([b"data: ok\n", b"data: \xff\n"], "not UTF-8"),
        ([b"data: caf\xc3"], "cut off at the end"),
        ([b"x" * 40, b"y" * 40], "longer than"),
    ],
)
def test_bytes_that_are_not_utf8_or_a_line_that_never_ends_are_a_wire_error(chunks, says):
    with pytest.raises(WireError, match=says):
        _through(chunks)


def test_many_short_lines_and_a_long_plain_answer_are_within_the_limits():
    assert _through([b"a" * 60 + b"\n"] * 10)
    assert _through([b"[" + b"1," * 1000 + b"1]"], max_line=None)


def test_an_escaped_lone_surrogate_or_nul_inside_tool_arguments_is_cleaned_at_both_levels():
    arguments = '{"path": "notes\\ud800.md", "text": "a\\u0000b", "ok": "\\ud83d\\ude00"}'
    assert json.loads(clean_arguments(arguments)) == {
        "path": "notes\ufffd.md",
        "text": "a\ufffdb",
        "ok": "\U0001f600",
    }
    assert clean_arguments('{"path": "a.txt"}') == '{"path": "a.txt"}'
    assert clean_arguments("not JSON at all") == "not JSON at all"


def test_tool_arguments_nested_too_deeply_to_read_are_refused():
    with pytest.raises(ValueError, match="nested too deeply"):
        clean_arguments("[" * 100_000 + "]" * 100_000)


class _FakeChild:
    """The embedded engine's child as the parent sees it: answers already in the pipe."""

    def __init__(self, answers: list[dict[str, object]]) -> None:
        self.answers = answers

    def subscribe(self, request_id: str) -> asyncio.Queue[object]:
        queue: asyncio.Queue[object] = asyncio.Queue()
        for answer in self.answers:
            queue.put_nowait({"id": request_id, **answer})
        return queue

    def send(self, message: object) -> None:
        pass

    def unsubscribe(self, request_id: str) -> None:
        pass

    def cancel(self, request_id: str) -> None:
        pass


def test_the_embedded_engines_text_and_tool_calls_are_decoded_like_every_engines(
    monkeypatch: pytest.MonkeyPatch,
):
    child = _FakeChild(
        [
            {"type": "delta", "text": "Smile "},
            {"type": "delta", "text": "\ud83d"},
            {"type": "delta", "text": "\ude00 half \ud83d"},
            {
                "type": "done",
                "finish_reason": "tool_calls",
                "usage": {"prompt_tokens": 5, "completion_tokens": 4},
                "tool_calls": [("read\ud800", '{"path": "notes\\ud800.md"}')],
            },
        ]
    )
    provider = EmbeddedProvider(model_path="unused.gguf")

    async def ensure_child() -> _FakeChild:
        return child

    monkeypatch.setattr(provider, "_ensure_child", ensure_child)

    async def run() -> list[object]:
        return [item async for item in provider.stream_chat("", [], ChatOptions())]

    items = asyncio.run(run())
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert text == "Smile \U0001f600 half \ufffd"
    (ready,) = [i for i in items if isinstance(i, ToolCallsReady)]
    (call,) = ready.calls
    assert call.name == "read\ufffd" and call.parsed_arguments() == {"path": "notes\ufffd.md"}
