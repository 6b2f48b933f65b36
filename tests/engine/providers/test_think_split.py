"""A `<think>` block left in the content by a server that does not split it: the user sees
the reasoning apart from the answer, whatever way the stream was cut into deltas."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.providers.base import ReasoningDelta, TextDelta
from engine.providers.think_split import ThinkSplitter, opens_thinking


def _split(pieces: list[str], *, opened: bool = False) -> tuple[str, str, list[object]]:
    splitter = ThinkSplitter(opened=opened)
    items: list[object] = []
    for piece in pieces:
        items.extend(splitter.feed(piece))
    items.extend(splitter.flush())
    reasoning = "".join(i.text for i in items if isinstance(i, ReasoningDelta))
    answer = "".join(i.text for i in items if isinstance(i, TextDelta))
    return reasoning, answer, items


def test_a_leading_block_is_reasoning_and_the_rest_is_the_answer():
    reasoning, answer, _ = _split(["<think>\nThe user greets me.\n</think>\n\nHello!"])
    assert (reasoning, answer) == ("The user greets me.", "Hello!")


def test_tags_cut_across_deltas_are_still_found():
    text = "  <think>\nplan a b\n</think>\n\nDone."
    reasoning, answer, _ = _split(list(text))  # one character per delta
    assert (reasoning, answer) == ("plan a b", "Done.")


def test_reasoning_streams_as_it_comes_not_only_at_the_close():
    splitter = ThinkSplitter()
    assert splitter.feed("<think>\nfirst") == [ReasoningDelta("first")]
    assert splitter.feed(" second") == [ReasoningDelta(" second")]
    assert splitter.thinking


def test_a_think_tag_after_the_answer_started_is_answer_text():
    reasoning, answer, _ = _split(["Use the <think> tag.", " Then </think> closes it."])
    assert reasoning == ""
    assert answer == "Use the <think> tag. Then </think> closes it."


def test_a_pre_opened_block_ends_at_the_close_tag_alone():
    reasoning, answer, _ = _split(["Let me see.", "</thi", "nk>\n\nIt is 4."], opened=True)
    assert (reasoning, answer) == ("Let me see.", "It is 4.")


def test_an_unclosed_block_at_the_end_is_reasoning_not_answer():
    reasoning, answer, _ = _split(["<think>\nstill thinking when the cap hit </thi"])
    assert reasoning == "still thinking when the cap hit </thi"
    assert answer == ""


def test_a_stream_without_a_block_passes_through_unchanged():
    for text in ("\n\nHi there.", "<thinker> is a word", "  <thin", "   "):
        assert _split(list(text))[:2] == ("", text)


def test_a_prompt_that_opens_the_block_is_recognised():
    assert opens_thinking("<|im_start|>assistant\n<think>\n")
    assert not opens_thinking("<|im_start|>assistant\n")
    assert not opens_thinking("<think>\nx\n</think>\n")


# The alphabet is the tags' own characters and whitespace, so cut tags and near-tags
# (`<thin`, `</think`, `<think>` late in the answer) come up often.
_PARTS = ["<think>", "</think>", "<", "/", "t", "h", "i", "n", "k", ">", " ", "\n", "a"]
_texts = st.lists(st.sampled_from(_PARTS), max_size=24).map("".join)


@settings(max_examples=400, deadline=None)
@given(_texts, st.lists(st.integers(0, 40), max_size=8), st.booleans())
def test_any_split_of_the_stream_gives_the_same_reasoning_and_answer(text, cuts, opened):
    whole = _split([text], opened=opened)[:2]
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert _split(pieces, opened=opened)[:2] == whole


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20).filter(lambda t: "</think>" not in t), st.text(max_size=20))
def test_what_the_block_holds_never_reaches_the_answer(thought, answer):
    reasoning, shown, _ = _split([f"<think>\n{thought}\n</think>\n\n{answer}"])
    assert reasoning == thought.strip()
    assert shown == answer.lstrip()


_TURNS = "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}\n{% endfor %}"


def test_the_embedded_engines_template_is_asked_whether_it_opens_the_block():
    from engine.providers.chat_template import ChatTemplate

    opening = ChatTemplate(
        _TURNS + "{% if add_generation_prompt %}<|assistant|>\n<think>\n{% endif %}"
    )
    closed = ChatTemplate(
        _TURNS + "{% if add_generation_prompt %}<|assistant|>\n<think>\n\n</think>\n\n{% endif %}"
    )
    plain = ChatTemplate(_TURNS + "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    assert opening.opens_thinking()
    assert not closed.opens_thinking()
    assert not plain.opens_thinking()
