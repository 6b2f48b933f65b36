"""Words of scripts written without spaces, for comparing a line with a conversation.

Chinese, Japanese and Thai write a clause as one unbroken run, so "most of the line's words
are not in the conversation" read a faithful Chinese line as one unknown word. Such a run
is compared by its character pairs (bigrams) instead: a line that says what the user said
shares most of its pairs with the user's words, an invented one shares few. The words a
summary uses for "the user", "the assistant" and "the conversation" are taken out of a
run before it is paired, as the English ones are ignored, and pairs of kana alone
(particles, verb endings) count as ground but never as a claim.
"""

from __future__ import annotations

import re

# A run of one script written without spaces: Han, kana (with the long-vowel mark), Thai.
_UNSPACED_RUN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    r"\u0e00-\u0e7f]+"
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W\d_]+)?")
_PIECE = re.compile(
    r"[0-9]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    r"\u0e00-\u0e7f]+|[^0-9\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff"
    r"\uff66-\uff9f\u0e00-\u0e7f]+"
)
_KANA_ONLY = re.compile(r"^[\u3040-\u309f\u30fc]+$")

# "The user", "the assistant", "the conversation", "said/mentioned" in Chinese and Japanese:
# the frame of a summary's line, not its claim.
_FRAMING_RUNS = re.compile(
    "用户|使用者|助手|对话|提到|表示|告诉|說|ユーザー|利用者|アシスタント|会話|述べ"
)
# The same in the spaced languages whose words grounding reads.
FOREIGN_FRAMING: frozenset[str] = frozenset(
    {
        *("nutzer", "nutzerin", "benutzer", "benutzerin", "anwender", "anwenderin"),
        *("assistent", "gespräch", "unterhaltung", "erwähnt", "erwähnte"),
        *("utilisateur", "utilisatrice", "assistant", "conversation", "mentionné"),
        *("usuario", "usuaria", "asistente", "conversación", "mencionó"),
        *("usuário", "usuária", "assistente", "conversa", "mencionou"),
        *("utente", "conversazione", "menzionato"),
        *("пользователь", "пользователя", "ассистент", "разговор", "упомянул"),
    }
)


def is_unspaced(word: str) -> bool:
    """Whether `word` is (a pair of) a script written without spaces."""
    return bool(word) and _UNSPACED_RUN.fullmatch(word) is not None


def _pairs(run: str) -> list[str]:
    out: list[str] = []
    for part in _FRAMING_RUNS.split(run):
        if len(part) == 1:
            out.append(part)
        out.extend(part[i : i + 2] for i in range(len(part) - 1))
    return out


def tokens(text: str) -> list[str]:
    """The words of `text`: spaced words as written, numbers apart from the script around
    them ("1200欧元" is 1200 and 欧元), and runs of unspaced script as character pairs."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if not _UNSPACED_RUN.search(word) and not (word[:1].isdigit() and not word.isdigit()):
            out.append(word)
            continue
        for piece in _PIECE.findall(word):
            out.extend(_pairs(piece) if is_unspaced(piece) else [piece])
    return out


def is_grammar(pair: str) -> bool:
    """A pair of kana alone: a particle or an ending, no claim of its own."""
    return _KANA_ONLY.match(pair) is not None
