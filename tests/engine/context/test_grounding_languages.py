"""Grounding holds a checkpoint to the conversation in every language (issue 49, must-show
5): a faithful checkpoint of a Chinese, a Japanese and a German conversation keeps every
line, and an invented one in each is refused line by line. Chinese and Japanese are written
without spaces (a clause is one run, compared by character pairs); German capitalises its
nouns, so "Reise" is no unknown name where the user wrote of a "Reise"."""

from __future__ import annotations

import pytest

from engine.context.checkpoint import checkpoint_entries
from engine.context.grounding import conversation_ground, grounded_checkpoint
from engine.messages import Message, assistant, user

CONVERSATIONS: dict[str, list[Message]] = {
    "zh": [
        user("我计划五月和我妹妹一起去里斯本旅行。我们整个旅行的预算是1200欧元。"),
        assistant("听起来很棒！五月的里斯本天气很好。你们想看什么？"),
        user("我对花生过敏。我妹妹喜欢瓷砖和博物馆。请推荐三个博物馆。"),
        assistant("可以去国家瓷砖博物馆、古尔本基安博物馆和贝伦塔。"),
        user("我们住在阿尔法玛区的一家小酒店。"),
    ],
    "ja": [
        user("五月に妹とリスボンへ旅行する予定です。予算は全部で1200ユーロです。"),
        assistant("いいですね。五月のリスボンは気候が良いです。何を見たいですか？"),
        user("私はピーナッツアレルギーです。妹はタイルと美術館が好きです。"),
        assistant("国立アズレージョ美術館とグルベンキアン美術館をおすすめします。"),
        user("ホテルはアルファマ地区にあります。"),
    ],
    "de": [
        user("Ich heiße Jonas Weber. Ich plane im Mai eine Reise nach Lissabon mit meiner "
             "Schwester."),
        assistant("Schön! Lissabon ist im Mai angenehm warm. Was möchtet ihr sehen?"),
        user("Unser Budget für die ganze Reise beträgt 1200 Euro. Ich bin allergisch gegen "
             "Erdnüsse."),
        assistant("Dann empfehle ich das Fliesenmuseum und das Gulbenkian-Museum."),
        user("Meine Schwester mag Fliesen und Museen. Wir wohnen in einem Hotel in der Alfama."),
    ],
}  # fmt: skip

# What a summarizer that understood the conversation writes, in its language.
FAITHFUL = {
    "zh": (
        "## Goal\n- 用户计划五月和妹妹去里斯本旅行。\n"
        "## Constraints & Preferences\n- 预算是1200欧元。\n- 用户对花生过敏。\n"
        "## Key Decisions\n- 推荐了国家瓷砖博物馆和古尔本基安博物馆。\n"
        "## Critical Context\n- 他们住在阿尔法玛区的小酒店。\n"
    ),
    "ja": (
        "## Goal\n- ユーザーは五月に妹とリスボンへ旅行する予定。\n"
        "## Constraints & Preferences\n- 予算は1200ユーロ。\n- ピーナッツアレルギーがある。\n"
        "## Key Decisions\n- 国立アズレージョ美術館とグルベンキアン美術館をおすすめした。\n"
        "## Critical Context\n- ホテルはアルファマ地区。\n"
    ),
    "de": (
        "## Goal\n- Der Nutzer plant im Mai eine Reise nach Lissabon mit seiner Schwester.\n"
        "## Constraints & Preferences\n- Das Budget beträgt 1200 Euro.\n"
        "- Jonas ist allergisch gegen Erdnüsse.\n"
        "## Key Decisions\n- Die Empfehlungen waren das Fliesenmuseum und das Gulbenkian-Museum.\n"
        "## Critical Context\n- Die Schwester mag Fliesen und Museen.\n"
    ),
}
# What a small summarizer makes up: places, sums and people nobody named.
INVENTED = {
    "zh": (
        "## Goal\n- 用户想去东京购买一台新相机。\n"
        "## Constraints & Preferences\n- 预算是5000美元。\n"
        "## Critical Context\n- 张伟负责预订机票和火车。\n"
    ),
    "ja": (
        "## Goal\n- ユーザーは京都で寿司屋を開く計画を立てている。\n"
        "## Constraints & Preferences\n- 予算は300万円。\n"
        "## Critical Context\n- 田中さんが銀行の手続きを担当する。\n"
    ),
    "de": (
        "## Goal\n- Der Nutzer möchte ein Fahrrad in Hamburg kaufen.\n"
        "## Constraints & Preferences\n- Das Budget beträgt 5000 Euro.\n"
        "## Critical Context\n- Thomas Müller bucht den Flug nach Rom.\n"
    ),
}


def _lines(checkpoint: str) -> list[str]:
    return [e for entries in checkpoint_entries(checkpoint).values() for e in entries]


@pytest.mark.parametrize("language", ["zh", "ja", "de"])
def test_a_faithful_checkpoint_keeps_every_line(language: str) -> None:
    ground = conversation_ground(CONVERSATIONS[language], [])
    kept, refused = grounded_checkpoint(FAITHFUL[language], ground)
    assert refused == []
    assert _lines(kept) == _lines(FAITHFUL[language])


@pytest.mark.parametrize("language", ["zh", "ja", "de"])
def test_an_invented_checkpoint_is_refused_line_by_line(language: str) -> None:
    ground = conversation_ground(CONVERSATIONS[language], [])
    kept, refused = grounded_checkpoint(INVENTED[language], ground)
    assert _lines(kept) == []
    assert len(refused) == len(_lines(INVENTED[language]))


def test_a_name_that_opens_a_sentence_is_checked() -> None:
    """ "Tokio im Mai …" names a city the German conversation never did; "Lissabon im Mai …"
    names the one it did."""
    ground = conversation_ground(CONVERSATIONS["de"], [])
    kept, refused = grounded_checkpoint(
        "## Goal\n- Tokio im Mai mit der Schwester.\n- Lissabon im Mai mit der Schwester.\n", ground
    )
    assert _lines(kept) == ["Lissabon im Mai mit der Schwester."]
    assert "Tokio" in refused[0]
