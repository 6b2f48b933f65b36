"""Whether what a summarizer wrote is found in the conversation it stands for.

A small model asked to summarize answers fluently about things nobody said. Measured on the
bundled SmolLM2 at a 1K pin, two compactions wrote "The user is trying to get the transcript
removed from their text." (the word "transcript" came from Brim's own prompt), "The user
stated none.", "Premise of the past. I'm sorry to hear…" and "The user has already answered
the question."; on vLLM, "…; Lady Nova Coralathing". Every one passed the checks of
engine/context/summary_checks.py, which judge a whole answer and let a short line through,
and the user's "Thanks." was then answered with the transcript line.

So every sentence the summarizer writes is held to the conversation, one at a time: a
sentence that is only a null answer ("none", "The user stated none.") or says nothing of
its own ("The user has already answered the question."), speaks as the assistant ("I'm
sorry …"), takes a word from Brim's prompts that the conversation never used ("transcript",
"stop the task"), names a name or a number the conversation does not hold, or is mostly
words found nowhere in it, is left out; the rest of the answer stays. The ground is the
conversation's own messages (the user's, the model's, the tools') and what earlier
checkpoints carried mechanically (the user's statements, the files read, the user's first
request); never Brim's system prompt, its compaction instructions or its checkpoint's face.
An earlier checkpoint's own entries count only where they pass the same checks that need no
conversation: a line invented before this check existed is not carried, nor let to vouch
for a new one. Words are compared by a crude stem, so a paraphrase in the conversation's
own words ("planning" for "plan", "museums" for "museum") is kept.

Every language: a script written without spaces (Chinese, Japanese, Thai) is one "word" per
clause, so its runs are compared by character pairs (engine/context/unspaced.py): a faithful
Chinese line shares most of its pairs with the conversation, an invented one does not. A
capitalised word is a name only where the conversation holds no form of it (German
capitalises every noun: "Reise" said as "reise" or "Reisen" is no unknown name), the words
a summary names the user and the conversation by are framing in every language ("Der
Nutzer …", "L'utilisateur …"), and a name that opens a sentence is checked too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.context.checkpoint import (
    checkpoint_entries,
    normalize_checkpoint,
    parse_checkpoint,
    render_checkpoint,
)
from engine.context.constants import COVERED_SECTION, STATED_SECTION
from engine.context.frame_words import quoted_text
from engine.context.summary_checks import SUMMARY_WORDS, stem
from engine.context.unspaced import FOREIGN_FRAMING, is_grammar, is_unspaced, tokens
from engine.language import FUNCTION_WORDS, detect_language
from engine.messages import Message

_WORD = re.compile(r"[^\W_]+(?:['’][^\W\d_]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?;…])\s+(?=\S)|(?<=[。！？；])\s*(?=\S)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# A file or folder path, or a file name with its extension: "src/a.py", "notes.md".
_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]*/[\w./-]*\w|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4})(?![\w/])")
_NOT_PATHS = frozenset({"e.g", "i.e", "etc"})


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Two words whose stems share this many first letters are the same word ("configuration",
# "configure").
PREFIX_LETTERS = 6

# Words that carry no claim of their own: function words, and words an answer is built
# with whatever it says ("the user wants to know", "keep going").
_STOP = _set("""
    the and but for nor yet not are was were is be been being am has have had having do does
    did doing can could will would shall should may might must its it's this that these those
    there here then than when what which who whom whose why how where while with without from
    into onto upon over under about above below after before again once only also just very
    too all any both each few more most other some such own same one ones you your yours
    they them their theirs she her hers him his our ours out off per via etc
""")
_GLUE = _set("""
    keep keeps kept make makes made sure well good thing things something anything everything
    know knows like look looks see use uses used using get gets got going way ways order
    follow follows following give gives take takes show shows tell include includes including
    based related regarding various certain possible available important relevant new old
    first last many much several lot lots different specific particular let lets put set
    able want wants wanted check checks add adds call calls move open change changes
    write writes describe say says mind words word never now every long longer left
    send sends sent sending reply replies replied talk talks talked
""")
# The guided questions' own words, which an answer repeats to frame itself ("The user is
# trying to get …", "It was decided …", "The names needed are …").
_FRAMING = _set("""
    trying try tries tried done stated state states decided decide happen happens next
    needed names name numbers number values value requirements requirement preferences
    preference constraints constraint exact sentence line ask short brief briefly list lists
    path paths
""")
# A null answer: nothing but these (with the words above) says there is nothing to say.
_NULL = _set("""
    none nothing no not n a unknown unspecified unclear explicit explicitly yet far applicable
    clear given noted
""")
_IGNORED = _STOP | _GLUE | _FRAMING | SUMMARY_WORDS | _NULL | FOREIGN_FRAMING

# The model speaking as the assistant: an apology, thanks, a word about itself.
_VOICE = re.compile(
    r"^\W*(?:i\b|i['’](?:m|ll|ve|d)\b|my\b|me\b|let me\b|let['’]s\b|here(?:['’]s| is| are)\b"
    r"|sorry\b|apologi|thank|as an ai\b|as a (?:language model|helpful|digital)\b"
    r"|(?:certainly|sure|of course|great|absolutely)\b[!,.]?)",
    re.IGNORECASE,
)
# An apology or a word about itself anywhere in a line: a summary line states facts, and
# a small model puts its apology behind a label it echoes ('One short sentence: "I'm sorry…').
_VOICE_ANYWHERE = re.compile(
    r"\bi['’]?m sorry\b|\bi am sorry\b|\bi apologi[sz]e\b|\bmy apologies\b|\bas an ai\b",
    re.IGNORECASE,
)


def _norm(word: str) -> str:
    w = word.casefold().replace("’", "'")
    return w[:-2] if w.endswith("'s") else w


def root(word: str) -> str:
    """The word's stem with a final e or y taken off: "remove" and "removed" meet."""
    r = stem(_norm(word))
    return r[:-1] if len(r) > 3 and r[-1] in "ey" else r


@dataclass(frozen=True)
class Ground:
    """The words a summarizer's line may use: those of the conversation it summarizes."""

    folded: frozenset[str]
    roots: frozenset[str]
    prefixes: frozenset[str]
    paths: frozenset[str] = frozenset()

    def has(self, word: str, *, exact: bool = False) -> bool:
        """Whether `word` is found here: as written, by stem, or (unless `exact`, as for a
        name) by the first letters of its stem."""
        w = _norm(word)
        r = root(w)
        if w in self.folded or r in self.roots:
            return True
        return not exact and len(r) >= PREFIX_LETTERS and r[:PREFIX_LETTERS] in self.prefixes


def ground_of(texts: Iterable[str]) -> Ground:
    """The ground that `texts` (a conversation's own words) give."""
    texts = list(texts)
    folded = {_norm(w) for text in texts for w in tokens(text)}
    roots = {root(w) for w in folded}
    prefixes = {r[:PREFIX_LETTERS] for r in roots if len(r) >= PREFIX_LETTERS}
    paths = {_path_key(p) for text in texts for p in _PATH.findall(text)}
    return Ground(frozenset(folded), frozenset(roots), frozenset(prefixes), frozenset(paths))


def _path_key(path: str) -> str:
    return path.casefold().strip("./")


# Words Brim's prompts use about the request itself (the transcript, the checkpoint, the
# instruction to stop the task for a moment): a line that uses one the conversation never
# did took it from the prompt ("The user is trying to get the transcript removed").
_PROMPT_WORDS = _set("""
    transcript transcripts checkpoint checkpoints compaction compacted compact brim prompt
    prompts instruction instructions untrusted marker markers material verbatim heading
    headings summarize summarized summarizer stop stopped moment factually
""")


def _content(tokens: Sequence[str]) -> list[str]:
    return [
        _norm(t)
        for t in tokens
        if (is_unspaced(t) or len(_norm(t)) >= 3)
        and not t.isdigit()
        and not is_grammar(t)
        and _norm(t) not in _IGNORED
    ]


def _names(sentence: str, *, english: bool = True) -> list[tuple[str, bool]]:
    """The capitalised words, each with whether it opens the sentence or a clause (where
    any word is capitalised, so only a word the conversation holds in no form is taken
    for a name there). An English line opens with a verb as often as with a name ("Track
    the figures …"), so there an opening word is a name only when another capitalised word
    follows it ("Maria Silva booked …"); a line in another language opens with its article
    ("Der Nutzer …", "L'utilisateur …") or its subject, so there it is checked."""
    out = []
    matches = list(_WORD.finditer(sentence))
    for i, match in enumerate(matches):
        word = match.group(0)
        if not word[0].isupper() or is_unspaced(word):
            continue
        if _norm(word) in _IGNORED or _norm(word).startswith("i'") or word == "I":
            continue
        before = sentence[: match.start()].rstrip()
        opening = not before or before[-1] in ":\"“‘'(—-"
        if opening and _norm(word) in FUNCTION_WORDS:
            continue
        if opening and english and not _full_name(sentence, matches, i):
            continue
        out.append((word, opening))
    return out


def _full_name(sentence: str, matches: list[re.Match[str]], i: int) -> bool:
    """Whether the word at `i` is followed at once by another capitalised word."""
    if i + 1 >= len(matches):
        return False
    nxt = matches[i + 1]
    gap = sentence[matches[i].end() : nxt.start()]
    return gap == " " and nxt.group(0)[0].isupper() and _norm(nxt.group(0)) not in _IGNORED


def hygiene_reason(sentence: str, ground: Ground) -> str | None:
    """Why a sentence is no fact about any conversation: a null answer, nothing said, the
    assistant's voice, or a word of Brim's prompt the conversation (`ground`) never used."""
    words = tokens(sentence)
    if _VOICE.search(sentence) or _VOICE_ANYWHERE.search(sentence):
        return "the line is the model speaking as the assistant"
    content = _content(words)
    numbers = [t for t in words if t.isdigit()]
    if not content and not numbers and not _PATH.search(sentence):
        if any(_norm(t) in _NULL for t in words) or "n/a" in sentence.casefold():
            return "the line is an empty answer"
        return "the line says nothing the conversation holds"
    for word in content:
        if word in _PROMPT_WORDS and not ground.has(word, exact=True):
            return f"the line takes {word!r} from Brim's own prompt, not from the conversation"
    return None


def line_refusal(sentence: str, ground: Ground) -> str | None:
    """Why one sentence a summarizer wrote is not supported by the conversation, or None."""
    reason = hygiene_reason(sentence, ground)
    if reason is not None:
        return reason
    words = tokens(sentence)
    for path in _PATH.findall(sentence):
        if _path_key(path) not in ground.paths and path.casefold() not in _NOT_PATHS:
            return f"the line names the file {path!r}, found nowhere in the conversation"
    language = detect_language([sentence])
    for name, opening in _names(sentence, english=language == "en"):
        # A capitalised noun (German) or a sentence's first word is no name where the
        # conversation holds it in any form; one found nowhere is.
        if not ground.has(name, exact=not opening and language != "de"):
            return f"the line names {name!r}, found nowhere in the conversation"
    for number in (t for t in words if t.isdigit()):
        if number not in ground.folded:
            return f"the line holds the number {number}, found nowhere in the conversation"
    content = _content(words)
    absent = [w for w in content if not ground.has(w)]
    if len(absent) * 2 > len(content):
        return f"most of the line's words are not in the conversation ({', '.join(absent)})"
    return None


def grounded_text(text: str, ground: Ground) -> tuple[str, list[str]]:
    """`text` (one answer or entry) with its unsupported sentences left out, and why each
    was; "" when none is supported."""
    kept: list[str] = []
    refused: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        reason = line_refusal(sentence, ground)
        if reason is None:
            kept.append(sentence)
        else:
            refused.append(f"{reason}: {sentence!r}")
    return " ".join(kept).rstrip(" ;,"), refused


def grounded_checkpoint(text: str, ground: Ground) -> tuple[str, list[str]]:
    """A summarizer's whole checkpoint, each entry held to the conversation line by line:
    the supported ones in the schema, and why each other was left out."""
    _, sections = parse_checkpoint(normalize_checkpoint(text))
    refused: list[str] = []
    for title, lines in sections.items():
        kept = []
        for line in lines:
            bullet = _BULLET.match(line)
            body = line[bullet.end() :] if bullet else line
            if not body.strip():
                continue
            entry, why = grounded_text(body, ground)
            refused.extend(f"{title}: {reason}" for reason in why)
            if entry:
                kept.append(f"- {entry}")
        sections[title] = kept
    return render_checkpoint(sections), refused


def _mechanical(checkpoint: str) -> list[str]:
    """What an earlier checkpoint carried that Brim wrote from the user's words and the
    tool calls: the user's statements, the files read, the user's first request."""
    entries = checkpoint_entries(checkpoint)
    out = [*entries.get(STATED_SECTION, []), *entries.get(COVERED_SECTION, [])]
    for goal in entries.get("Goal", []):
        quoted = quoted_text(goal)
        if quoted is not None:
            out.append(quoted)
    return out


def _said(messages: Sequence[Message]) -> list[str]:
    """The conversation's own text: every message but Brim's (the system prompt, the
    checkpoint and its continuation note, notices), with the tool calls' arguments."""
    out = []
    for m in messages:
        if m.role in ("system", "notice") or m.kind in ("summary", "continuation", "notice"):
            continue
        out.append(m.content)
        out.extend(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return out


def conversation_ground(messages: Sequence[Message], priors: Sequence[str]) -> Ground:
    """The ground for a compaction of `messages` whose earlier checkpoints are `priors`."""
    base = [*_said(messages), *(line for prior in priors for line in _mechanical(prior))]
    plain = ground_of(base)
    vouched = [entry for prior in priors for entry in _model_entries(hygienic_prior(prior, plain))]
    return ground_of([*base, *vouched])


def _model_entries(checkpoint: str) -> list[str]:
    mechanical = set(_mechanical(checkpoint))
    return [
        entry
        for title, entries in checkpoint_entries(checkpoint).items()
        if title not in (STATED_SECTION, COVERED_SECTION)
        for entry in entries
        if entry not in mechanical and quoted_text(entry) is None
    ]


def hygienic_prior(checkpoint: str, ground: Ground) -> str:
    """An earlier checkpoint without its entries that are no fact about any conversation
    (`hygiene_reason`); Brim's mechanical sections are kept as they are."""
    _, sections = parse_checkpoint(checkpoint)
    for title, lines in sections.items():
        if title in (STATED_SECTION, COVERED_SECTION) or not title:
            continue
        kept = []
        for line in lines:
            body = _BULLET.sub("", line).strip()
            if not body or quoted_text(body) is not None:
                kept.append(line)
                continue
            pieces = [s for s in _SENTENCE_END.split(body) if hygiene_reason(s, ground) is None]
            if pieces:
                kept.append("- " + " ".join(pieces).rstrip(" ;,"))
        sections[title] = kept
    return render_checkpoint(sections)
