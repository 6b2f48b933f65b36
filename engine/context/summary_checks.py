"""Why a summarizer's text cannot stand for the messages it replaces.

A checkpoint is never worse than none: a small model asked to summarize often answers with
a phrase looped until its limit ("Não deve mós, não deve mós, …"), with words that are in
neither the transcript nor the earlier checkpoint, in another language than the
conversation, or with the prompt's own scaffolding (a fence delimiter, an instruction, a
`[user]` line of the transcript). Taken as history, such text replaces the task with noise,
and a small model then repeats it every turn. These checks are cheap (word sets, a few
stop-word lists, Unicode script names); each returns why the text is refused, or None.
They run on the free-form answer and on every guided answer alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from engine.context.summarizer import GUIDED_SYSTEM, REPLAY_MARK, REPLAY_QUESTION_MARK
from engine.resources import prompt, prompt_table

_WORD = re.compile(r"[^\W_]+(?:['’][^\W\d_]+)?")


def _split(text: str) -> frozenset[str]:
    return frozenset(text.split())


_LETTERS = re.compile(r"[^\W\d_]+")

# A back-to-back repeat: a phrase of 2..8 words three times in a row, or one word four.
MAX_PERIOD = 8
PHRASE_REPEATS = 3
WORD_REPEATS = 4
# Words a summary may use that its transcript need not contain (and short words, which
# say little either way) are not counted as invented.
MIN_CONTENT_WORDS = 8
INVENTED_SHARE = 0.75
# A language differs when the text has at least this many of another language's stop words
# and more of them than of the conversation's.
MIN_FOREIGN_STOPWORDS = 2
# A script (Latin, Cyrillic, CJK, …) the conversation barely uses may not carry the answer.
SCRIPT_SHARE = 0.5
SCRIPT_ABSENT_SHARE = 0.05

_STOPWORDS: dict[str, frozenset[str]] = {
    "en": _split(
        "the and is are was were of to with for that this you what which have has it not "
        "be on at from by an or will would can my your they their he she we there been "
        "about into than then when who how"
    ),
    "pt": _split(
        "não é com uma um os das dos para por que se mais deve você está são também muito "
        "isso ele ela como mas foi seu sua nós ao às pelo pela num numa"
    ),
    "es": _split(
        "el los las del para por que una es está son pero como más también muy esto ella "
        "su sus con y ese esa usted"
    ),
    "fr": _split(
        "le la les des est et une du pour dans pas que qui avec sur ce cette sont être mais "
        "nous vous il elle au aux"
    ),
    "de": _split(
        "der die das und ist nicht ein eine mit für auf dem ich sie zu von sind wir auch "
        "nicht oder aber"
    ),
    "it": _split("il lo gli della delle che è non una con sono anche molto questo questa degli"),
}

# Words a checkpoint is made of whatever the conversation was about.
SUMMARY_WORDS = _split("""
    user users assistant agent asked asks asking wants wanted want goal goals task tasks
    conversation discussed discussing mentioned stated said told tell provided requested
    request question questions answer answers answered none decided decision decisions next
    steps step done progress context file files read summary checkpoint continue continued
    information details help helped explained about also should would could will they them
    their there these those this that with from have been being into what which while
    where when here some more most other such only then than just like make made needs need
    earlier later previous before after still already currently current working work
    """)

_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ied", "ies", "ed", "es", "ly", "s")


def words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def stem(word: str) -> str:
    """A crude English stem: enough that "planning" finds "plan" and "budgets" "budget"."""
    w = word.casefold().replace("’", "'")
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


def repeated_phrase(text: str) -> str | None:
    """The phrase the text repeats back to back, if it loops."""
    ws = words(text)
    n = len(ws)
    for period in range(1, MAX_PERIOD + 1):
        copies = WORD_REPEATS if period == 1 else PHRASE_REPEATS
        span = period * copies
        for i in range(0, n - span + 1):
            block = ws[i : i + period]
            if all(ws[i + k * period : i + (k + 1) * period] == block for k in range(1, copies)):
                return " ".join(block)
    # Exact loops only: a list ("read `src/a.py`", "read `src/b.py`", …) repeats its
    # trigrams too, and is a good checkpoint.
    return None


def _content(ws: Iterable[str]) -> list[str]:
    stop = _STOPWORDS["en"]
    return [w for w in ws if len(w) >= 4 and not w.isdigit() and w not in stop]


def invented_share(text: str, reference: str) -> tuple[float, int]:
    """The share of the text's content words found nowhere in `reference` (by stem), and
    how many content words that share is of."""
    known = {stem(w) for w in words(reference)}
    content = [w for w in _content(words(text)) if w not in SUMMARY_WORDS]
    if not content:
        return 0.0, 0
    absent = [w for w in content if stem(w) not in known]
    return len(absent) / len(content), len(content)


def _stopword_hits(ws: list[str]) -> Counter[str]:
    hits: Counter[str] = Counter()
    for w in ws:
        for lang, stop in _STOPWORDS.items():
            if w in stop:
                hits[lang] += 1
    return hits


def _scripts(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for run in _LETTERS.findall(text):
        for ch in run:
            name = unicodedata.name(ch, "")
            found[name.split(" ", 1)[0] if name else "?"] += 1
    return found


def other_language(text: str, reference: str) -> str | None:
    """The other language or script the text is in, when the conversation's differs."""
    scripts, known = _scripts(text), _scripts(reference)
    letters, known_letters = sum(scripts.values()), sum(known.values())
    if letters and known_letters:
        script, count = scripts.most_common(1)[0]
        if count >= SCRIPT_SHARE * letters and known[script] < SCRIPT_ABSENT_SHARE * known_letters:
            return script.lower()
    hits, base = _stopword_hits(words(text)), _stopword_hits(words(reference))
    if not base:
        return None
    conversation = base.most_common(1)[0][0]
    for lang, n in hits.most_common():
        if lang == conversation:
            return None
        if n >= MIN_FOREIGN_STOPWORDS and n > hits[conversation]:
            return lang
    return None


def degenerate_reason(text: str, reference: str) -> str | None:
    """Why `text` is not a summary of `reference` (the transcript it stands for, with the
    earlier checkpoint): a loop, invented words, or another language."""
    phrase = repeated_phrase(text)
    if phrase is not None:
        return f"the summary repeats one phrase ({phrase!r})"
    if not reference.strip():
        return None
    lang = other_language(text, reference)
    if lang is not None:
        return f"the summary is in another language than the conversation ({lang})"
    share, of = invented_share(text, reference)
    if of >= MIN_CONTENT_WORDS and share >= INVENTED_SHARE:
        return f"most words of the summary appear nowhere in the conversation ({share:.0%})"
    return None


# The fence the summarizer's prompt puts around its material, and the transcript's markup.
_FENCE = re.compile(
    r"<<<|>>>|\b(?:END )?(?:TRANSCRIPT|PREVIOUS CHECKPOINT|WORK STATE) [0-9a-f]{8}\b"
)
_TRANSCRIPT_MARKUP = re.compile(
    r"^\s*\[(?:user|assistant|system|tool|tool result:[^\]]*|calls [^\]]*)\]"
    r"|\[… \d+ characters omitted …\]|older messages left out: they did not fit",
    re.IGNORECASE | re.MULTILINE,
)
# Text about the material instead of from it: a small model asked what the conversation
# said answers that it is "the conversation above, … a summary of a conversation between a
# user and a tool" (measured: SmolLM2 on llama-server, 4,096 tokens). Sent back as history,
# that tells the model nothing and invites it to talk about conversations in turn.
_ABOUT_THE_MATERIAL = re.compile(
    r"\b(?:the|this) (?:conversation|transcript|chat|summary) (?:above|below)\b"
    r"|\ba summary of (?:a|the|this) (?:conversation|transcript|chat)\b"
    r"|\bbetween a user and (?:a|an|the) (?:tool|assistant|ai|bot)\b",
    re.IGNORECASE,
)
_SHINGLE = 6


def _shingles(text: str) -> set[tuple[str, ...]]:
    ws = words(text)
    return {tuple(ws[i : i + _SHINGLE]) for i in range(len(ws) - _SHINGLE + 1)}


def _instruction_shingles() -> frozenset[tuple[str, ...]]:
    table = prompt_table("guided_questions")
    texts = [
        prompt("checkpoint_system").format(headings="", words=""),
        prompt("checkpoint_replay").format(headings="", words="", around=""),
        prompt("memory_extractor_rider").format(memory=""),  # it may ride the checkpoint's
        GUIDED_SYSTEM,
        table["replay_preamble"],
        *(item["question"] for item in table["questions"]),
    ]
    out: set[tuple[str, ...]] = set()
    for text in texts:
        out |= _shingles(text)
    return frozenset(out)


_INSTRUCTIONS = _instruction_shingles()


def leak_reason(text: str) -> str | None:
    """Why `text` carries the summarizer's own scaffolding: the fence delimiters, the
    instructions it was given, the transcript's markup, or talk about the material itself."""
    if _FENCE.search(text):
        return "the summary contains the delimiters of the summarizer's prompt"
    if REPLAY_MARK in text or REPLAY_QUESTION_MARK in text or _shingles(text) & _INSTRUCTIONS:
        return "the summary repeats the instructions given to the summarizer"
    if _TRANSCRIPT_MARKUP.search(text):
        return "the summary contains the transcript's markup"
    if _ABOUT_THE_MATERIAL.search(text):
        return "the summary talks about the conversation instead of what it said"
    return None


_SCAFFOLD = re.compile(r"(?:^|\s)#{1,6}\s+\S|\((?:none|n/a)\)", re.IGNORECASE)


def scaffold_reason(answer: str) -> str | None:
    """Why a one-line answer (a guided question's) is checkpoint scaffolding rather than an
    answer: a heading or a "(none)" placeholder inside it (a small model echoing a
    checkpoint it saw)."""
    if _SCAFFOLD.search(answer):
        return "the answer holds checkpoint headings or placeholders"
    return None


# The model answering as the assistant instead of answering the question: an apology, a
# refusal, a word about itself. SmolLM2 answered a guided question "I'm sorry for any
# misunderstanding, but as a server builder and developer, I specialize …", and it became
# the checkpoint's Constraints & Preferences.
_ASSISTANT_VOICE = re.compile(
    r"^\W*(?:i['’]?m sorry|i am sorry|sorry\b|i apologi[sz]e|my apologies|apologies\b"
    r"|as an ai\b|as a (?:language model|helpful assistant|digital assistant)\b"
    r"|i (?:can(?:no|['’])t|am unable to|['’]m unable to|am not able to|don['’]t have access)\b"
    r"|(?:certainly|sure|of course)[!,.]?\s+(?:i|here)\b)",
    re.IGNORECASE,
)


def assistant_voice_reason(answer: str) -> str | None:
    """Why a guided answer is the model speaking as the assistant (an apology, a refusal,
    "Sure! Here …") rather than a fact about the conversation."""
    if _ASSISTANT_VOICE.search(answer):
        return "the answer is the model speaking as the assistant, not about the conversation"
    return None


_DANGLING = re.compile(r"(?:\bthe answer is\b[\s.:]*|:\s*)$", re.IGNORECASE)
_ASKED = re.compile(r"^\s*question:\s*|\?.*$", re.IGNORECASE | re.DOTALL)


def echo_reason(answer: str, question: str) -> str | None:
    """Why a guided answer only echoes its question ("What was decided so far? The answer
    is."): it repeats the question's words in order, or adds no content word of its own,
    or stops where the answer should begin."""
    asked = words(_ASKED.sub("", question))  # the question itself, not its instructions
    said = words(answer)
    if asked and any(said[i : i + len(asked)] == asked for i in range(len(said))):
        return "the answer repeats its question"
    if not set(_content(said)) - set(_content(asked)):
        return "the answer adds nothing to its question"
    if _DANGLING.search(answer):
        return "the answer stops where it should begin"
    return None


def unusable_reason(text: str, reference: str) -> str | None:
    """Both checks: why `text` may not enter a checkpoint, or None."""
    return leak_reason(text) or degenerate_reason(text, reference)
