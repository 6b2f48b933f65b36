"""Which language a user writes in, from their own words: script first, then stop words.

Brim's own lines in a request (the checkpoint's frame, the continuation note) follow the
conversation's language, and memory's first pass reads each language by its own table; both
ask this module. It is deliberately small: the script decides Chinese, Japanese, Korean,
Russian (Cyrillic), Thai, Arabic and Hindi (Devanagari); among Latin-script languages a
handful of the commonest function words decides, and English is the answer when nothing
tips the balance (too few words to tell).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

# The languages Brim has its own words for (resources/language/*.toml), English first.
LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "pt", "it", "ru", "zh", "ja")

_LATIN_WORD = re.compile(r"[a-zà-öø-ÿœß]+", re.IGNORECASE)


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Function words frequent in each language and rare in the others ("a", "de", "e", "la" and
# the like are shared too widely to count).
_STOP: dict[str, frozenset[str]] = {
    "en": _set("the and is are was were of to with for that this you what have has it not "
               "my your we our i am be will would can from at on"),
    "de": _set("der die das und ist nicht ein eine einen mit für auf dem den ich sie zu von "
               "sind wir auch oder aber mein meine meinen mir mich bin hat habe wohne heiße "
               "dass nach bei im vom zum zur noch schon sehr"),
    "fr": _set("le les des est et une du pour dans pas que qui avec sur ce cette sont mais "
               "nous vous il elle au aux je suis mon ma mes j'ai"),
    "es": _set("el los las del para por que una es está son pero como más muy esto ella su "
               "sus con y yo mi mis soy estoy tengo vivo"),
    "pt": _set("não é com uma um os das dos para por que mais você está são também muito "
               "isso ele ela como mas foi seu sua nós eu meu minha sou moro tenho numa num"),
    "it": _set("il lo gli della delle che è non una con sono anche molto questo questa io "
               "mio mia ho abito vivo"),
}  # fmt: skip


def _script(ch: str) -> str | None:
    if "\u3040" <= ch <= "\u30ff" or "\u31f0" <= ch <= "\u31ff" or "\uff66" <= ch <= "\uff9f":
        return "kana"
    if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
        return "han"
    if "\uac00" <= ch <= "\ud7af":
        return "hangul"
    if "\u0400" <= ch <= "\u04ff":
        return "cyrillic"
    if "\u0e00" <= ch <= "\u0e7f":
        return "thai"
    if "\u0600" <= ch <= "\u06ff":
        return "arabic"
    if "\u0900" <= ch <= "\u097f":
        return "devanagari"
    if ch.isalpha() and "LATIN" in unicodedata.name(ch, ""):
        return "latin"
    return None


def detect_language(texts: Iterable[str]) -> str:
    """The language of `texts` (a user's messages) as a short code: one of LANGUAGES, or
    "ko", "th", "ar", "hi" by script alone; "en" when it cannot tell."""
    text = "\n".join(texts)
    scripts = Counter(s for s in map(_script, text) if s is not None)
    if not scripts:
        return "en"
    han, kana = scripts["han"], scripts["kana"]
    top, _ = scripts.most_common(1)[0]
    if han + kana >= max(scripts["latin"], 1) * 0.5 and han + kana >= 2:
        return "ja" if kana * 10 >= han + kana else "zh"
    by_script = {"hangul": "ko", "cyrillic": "ru", "thai": "th", "arabic": "ar",
                 "devanagari": "hi"}  # fmt: skip
    if top in by_script:
        return by_script[top]
    hits: Counter[str] = Counter()
    for word in _LATIN_WORD.findall(text.casefold().replace("’", "'")):
        for lang, stop in _STOP.items():
            if word in stop:
                hits[lang] += 1
    if not hits:
        return "en"
    best, count = hits.most_common(1)[0]
    return best if count > hits["en"] else "en"


# Words no sentence is named by, in any of these languages: a capitalised one that opens a
# sentence ("Der", "Le", "El") is no name.
FUNCTION_WORDS: frozenset[str] = frozenset().union(*_STOP.values()) | _set(
    "a an o os as um uma un une uno una la las lo los le les el il gli i er es sie ihr "
    "sein seine ihre ihr dieser diese dieses jener er en und dann auch noch ce cette ces "
    "il ils elles on este esta estos estas ese esa aquel ele ela eles elas questo questa "
    "quello quella egli essa"
)


def has_english_words(text: str) -> bool:
    """Whether `text` holds any of English's commonest function words."""
    return any(w in _STOP["en"] for w in _LATIN_WORD.findall(text.casefold().replace("’", "'")))
