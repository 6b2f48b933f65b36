from engine.context.clearing import clear_tool_results, protected_window_start
from engine.messages import system, user

from .histories import Ids, count, cycle, pairing_ok


def history_with_cycles(n: int, result_chars: int = 4_000) -> list:
    ids = Ids()
    msgs = [system("sys"), user("audit the repo")]
    for _ in range(n):
        msgs.extend(cycle(ids, result_chars))
    return msgs


def test_nothing_inside_the_five_most_recent_tool_cycles_is_cleared():
    msgs = history_with_cycles(5)
    result = clear_tool_results(msgs, count_message=count)
    assert result.cleared == 0
    assert result.messages == msgs


def test_an_old_large_result_becomes_a_placeholder_naming_retrieve_tool_result_and_its_call():
    msgs = history_with_cycles(6)
    stored: dict[str, str] = {}
    result = clear_tool_results(
        msgs, count_message=count, store_result=lambda i, t: stored.setdefault(i, t) is not None
    )
    assert result.cleared == 1 and result.stored == 1
    old = result.messages[3]
    assert "retrieve_tool_result" in old.content and '"call_1"' in old.content
    assert stored == {"call_1": msgs[3].content}
    assert result.tokens_reclaimed > 900
    assert result.messages[4:] == msgs[4:]


def test_when_the_store_cannot_be_written_the_placeholder_says_to_rerun_the_tool():
    msgs = history_with_cycles(6)

    def broken(_id: str, _text: str) -> bool:
        raise OSError("read-only file system")

    for store in (broken, lambda i, t: False, None):
        old = clear_tool_results(msgs, count_message=count, store_result=store).messages[3]
        assert "retrieve_tool_result" not in old.content
        assert "re-run" in old.content and "read_file" in old.content
        assert "src/call_1.py" in old.content


def test_small_results_are_left_alone():
    msgs = history_with_cycles(7, result_chars=400)
    assert clear_tool_results(msgs, count_message=count).cleared == 0


def test_a_cleared_result_is_never_rewritten_again():
    msgs = history_with_cycles(6)
    calls: list[str] = []
    store = lambda i, t: calls.append(i) or True  # noqa: E731
    once = clear_tool_results(msgs, count_message=count, store_result=store).messages
    twice = clear_tool_results(once, count_message=count, store_result=store)
    assert twice.cleared == 0 and twice.messages == once
    assert calls == ["call_1"]
    # Even after more cycles push the window forward, the old stub is not rewritten.
    later = once + cycle(Ids(), 4_000)
    third = clear_tool_results(later, count_message=count, store_result=store)
    assert third.messages[3] is once[3]


def test_clearing_keeps_every_message_and_its_pairing():
    msgs = history_with_cycles(12)
    result = clear_tool_results(msgs, count_message=count)
    assert result.cleared == 7
    assert [m.id for m in result.messages] == [m.id for m in msgs]
    assert [m.tool_call_id for m in result.messages] == [m.tool_call_id for m in msgs]
    assert pairing_ok(result.messages)


def test_the_protected_window_starts_at_the_assistant_of_the_fifth_latest_cycle():
    msgs = history_with_cycles(7)
    start = protected_window_start(msgs)
    assert msgs[start].role == "assistant" and msgs[start].tool_calls
    assert sum(1 for m in msgs[start:] if m.tool_calls) == 5
