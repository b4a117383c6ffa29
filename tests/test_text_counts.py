"""Counts told to people: the noun in the right number, thousands separated."""

from __future__ import annotations

from core.text import counted


def test_counts_are_told_with_their_noun_in_the_right_number():
    assert counted(1, "session") == "1 session"
    assert counted(0, "session") == "0 sessions"
    assert counted(1_200, "entry") == "1,200 entries"
    assert counted(1, "entry") == "1 entry"
    assert counted(2, "day") == "2 days"
    assert counted(3, "match") == "3 matches"
