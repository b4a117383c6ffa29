"""Text facts both the engine and recall need, kept in the store so neither imports the other."""

from __future__ import annotations

import re

# Han (with extensions and compatibility ideographs), iteration marks, kana, Hangul.
CJK_CHARS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0002ebef\U00030000-\U0003134f"
)
HAS_CJK = re.compile(f"[{CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese, Japanese or Korean letter."""
    return HAS_CJK.search(text) is not None
