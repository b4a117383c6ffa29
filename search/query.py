"""User text -> safe FTS5 expressions, one per index, in the order to try them (SPEC R3).

The user's syntax is small: ``"exact phrase"``, ``prefix*``, and implicit AND between terms.
Everything else -- FTS5 operators (``AND OR NOT NEAR``), ``- : ^ ( ) + %``, paths, e-mail
addresses, ``foo-bar``, ``file.py`` -- is text. Every term reaches FTS5 as a double-quoted
string with its quotes doubled, so no user input can be read as FTS5 syntax and no query raises a
syntax error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from search.text import CJK_RUN, WORD, word_text
from sessions_app.text import has_cjk

MAX_QUERY_CHARS = 1_000
MAX_TERMS = 32
# A query needs one character outside this set: Python's whitespace and JavaScript's (the API
# schema states it as a pattern, which JSON Schema tools read as an ECMAScript regex), spelt
# out so both engines read the same class.
BLANK = r" \t\n\r\v\f\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NOT_BLANK = f"[^{BLANK}]"
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class InvalidQuery(ValueError):
    """The query cannot be searched; the message says why and what to do."""


@dataclass(frozen=True)
class Term:
    text: str
    phrase: bool = False
    prefix: bool = False

    @property
    def cjk(self) -> bool:
        return has_cjk(self.text)

    @property
    def has_words(self) -> bool:
        return WORD.search(self.text) is not None


@dataclass(frozen=True)
class Route:
    """One way to answer: an index and its expression (or, for ``scan``, the LIKE needles)."""

    index: str  # words | bigram | trigram | scan
    expression: str = ""  # FTS5 syntax (SQLite)
    like: tuple[str, ...] = ()
    # What a backend without FTS5 builds its own query from: per term, the text to match as a
    # phrase and whether its last token is a prefix (PostgreSQL; see search.backends.postgres).
    phrases: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: tuple[Term, ...]
    routes: tuple[Route, ...] = field(default=())

    @property
    def needles(self) -> tuple[str, ...]:
        """Strings to highlight in an excerpt."""
        out: list[str] = []
        for term in self.terms:
            out.append(term.text)
            out.extend(WORD.findall(word_text(term.text)))
        return tuple(dict.fromkeys(n for n in out if n.strip()))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_terms(text: str) -> tuple[Term, ...]:
    """Split user text into terms: quoted phrases, ``word*`` prefixes, plain words."""
    text = CONTROL.sub(" ", text)
    terms: list[Term] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        if text[pos] == '"':
            end = text.find('"', pos + 1)
            if end != -1:
                inner = " ".join(text[pos + 1 : end].split())
                if inner:
                    terms.append(Term(inner, phrase=True))
                pos = end + 1
                continue
            pos += 1  # an unbalanced quote is dropped, the rest is read as words
            continue
        end = pos
        while end < len(text) and not text[end].isspace() and text[end] != '"':
            end += 1
        word = text[pos:end]
        pos = end
        stem = word.rstrip("*")
        if stem and stem != word and WORD.search(stem):
            terms.append(Term(stem, prefix=True))
        elif word.strip("*"):
            terms.append(Term(word))
    return tuple(dict.fromkeys(terms))


def _words_expression(terms: tuple[Term, ...]) -> str | None:
    if not terms or any(t.cjk or not t.has_words for t in terms):
        return None
    parts = [_quote(word_text(t.text)) + ("*" if t.prefix else "") for t in terms]
    return " AND ".join(parts)


def _bigram_tokens(term: Term) -> list[tuple[str, bool]]:
    """(token, is_prefix) pairs matching ``search.text.bigram_text`` of any text containing the
    term: bigrams for each CJK run; a run's last character is its own token only when the run
    ends inside the term (in indexed text it then ends too); a one-character final run is a
    prefix, since in indexed text it may start a longer run."""
    tokens: list[tuple[str, bool]] = []
    pos = 0
    text = term.text
    runs = list(CJK_RUN.finditer(text))
    for n, run in enumerate(runs):
        tokens += [(w.lower(), False) for w in WORD.findall(text[pos : run.start()])]
        chars = run.group()
        tokens += [(chars[i : i + 2], False) for i in range(len(chars) - 1)]
        final = n == len(runs) - 1 and not WORD.search(text[run.end() :])
        if not final:
            tokens.append((chars[-1], False))
        elif len(chars) == 1:
            tokens.append((chars, True))
        pos = run.end()
    tokens += [(w.lower(), False) for w in WORD.findall(text[pos:])]
    if term.prefix and tokens:
        tokens[-1] = (tokens[-1][0], True)
    return tokens


def _bigram_expression(terms: tuple[Term, ...]) -> str | None:
    if not terms or not any(t.cjk for t in terms) or any(not t.has_words for t in terms):
        return None
    parts = []
    for term in terms:
        tokens = _bigram_tokens(term)
        if not tokens:
            return None
        # FTS5 allows a prefix only on a phrase's last token, which is the only place we put one.
        phrase = " + ".join(_quote(tok) for tok, _ in tokens)
        parts.append(phrase + ("*" if tokens[-1][1] else ""))
    return " AND ".join(parts)


def _word_phrases(terms: tuple[Term, ...]) -> tuple[tuple[str, bool], ...]:
    return tuple((t.text, t.prefix) for t in terms)


def _bigram_phrases(terms: tuple[Term, ...]) -> tuple[tuple[str, bool], ...]:
    phrases = []
    for term in terms:
        tokens = _bigram_tokens(term)
        phrases.append((" ".join(tok for tok, _ in tokens), tokens[-1][1]))
    return tuple(phrases)


def _trigram_route(terms: tuple[Term, ...]) -> Route | None:
    long_terms = [t for t in terms if len(t.text) >= 3]
    if not long_terms:
        return None
    short = tuple(t.text for t in terms if len(t.text) < 3)
    return Route(
        "trigram",
        " AND ".join(_quote(t.text) for t in long_terms),
        like=short,
        phrases=tuple((t.text, False) for t in long_terms),
    )


def parse(text: str) -> ParsedQuery:
    """Parse and route. Raises InvalidQuery only for empty or oversized input."""
    if text is None or not re.search(NOT_BLANK, text):
        raise InvalidQuery("The query is empty: type at least one word or character.")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidQuery(
            f"The query is {len(text):,} characters long; the limit is {MAX_QUERY_CHARS:,}."
        )
    terms = parse_terms(text)
    if len(terms) > MAX_TERMS:
        raise InvalidQuery(f"The query has {len(terms)} terms; the limit is {MAX_TERMS}.")
    routes: list[Route] = []
    if terms:
        words = _words_expression(terms)
        bigram = _bigram_expression(terms)
        trigram = _trigram_route(terms)
        if words:
            routes.append(Route("words", words, phrases=_word_phrases(terms)))
        if bigram and trigram and all(len(t.text) >= 3 and WORD.fullmatch(t.text) for t in terms):
            # A CJK term of three or more letters with no space or punctuation is an exact
            # substring: the trigram index answers it with far fewer position checks than a
            # phrase of overlapping bigrams (three characters are a single trigram). The bigram
            # phrase follows for text that only matches token by token ("用 Django 写"); terms
            # with spaces or punctuation go to the bigram index first, which ignores them.
            routes += [trigram, Route("bigram", bigram, phrases=_bigram_phrases(terms))]
        else:
            if bigram:
                routes.append(Route("bigram", bigram, phrases=_bigram_phrases(terms)))
            if trigram:
                routes.append(trigram)
        routes.append(Route("scan", like=tuple(t.text for t in terms)))
    return ParsedQuery(text=text, terms=terms, routes=tuple(routes))
