"""The one sanitiser and the redactor."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeai_tui.textsafe import REDACTED, redact, redact_headers, visible


@given(st.text())
def test_visible_never_lets_a_control_or_bidi_character_through(text: str) -> None:
    out = visible(text, one_line=True)
    for ch in out:
        code = ord(ch)
        assert not (code < 0x20 or 0x7F <= code <= 0x9F)
        assert ch not in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def test_visible_names_what_it_replaced() -> None:
    assert visible("a\x1b[31mb") == "a⟨ESC⟩[31mb"
    assert visible("x\u202ey") == "x⟨U+202E⟩y"
    assert visible("l1\nl2\tt") == "l1\nl2\tt"
    assert visible("l1\nl2", one_line=True) == "l1⟨LF⟩l2"
    assert visible("\x9b") == "⟨U+009B⟩"
    assert visible("abcdef", limit=4) == "abc…"
    assert visible(None) == ""


def test_redaction_is_an_allowlist_of_names_and_value_shapes() -> None:
    doc = {
        "Authorization": "Bearer abcdefghijklmnop",
        "x-api-key": "k-123",
        "nested": [{"api_key": "zzz", "cookie": "c=1"}],
        "idempotency_key": "key-16",
        "max_tokens": 5,
        "note": "token sk-abcdefghijklmnopqrstu here",
    }
    out = redact(doc)
    assert out["Authorization"] == REDACTED and out["x-api-key"] == REDACTED
    assert out["nested"][0] == {"api_key": REDACTED, "cookie": REDACTED}
    assert out["idempotency_key"] == "key-16" and out["max_tokens"] == 5
    assert "sk-" not in out["note"]
    assert redact_headers({"Set-Cookie": "a", "Content-Type": "json"}) == {
        "Set-Cookie": REDACTED, "Content-Type": "json"}


def test_every_terminal_attack_of_the_pty_test_is_shown_not_sent() -> None:
    """The sequences tests/security/test_terminal_pty.py plants, one by one."""
    cases = {
        "\x1b]0;pwned\x07": "⟨ESC⟩]0;pwned⟨U+0007⟩",
        "\x1b]52;c;aGFjaw==\x07": "⟨ESC⟩]52;c;aGFjaw==⟨U+0007⟩",
        "\x1b]8;;https://e/\x1b\\": "⟨ESC⟩]8;;https://e/⟨ESC⟩\\",
        "\x9d0;t\x9c": "⟨U+009D⟩0;t⟨U+009C⟩",
        "\u2066iso\u2069\u061c": "⟨U+2066⟩iso⟨U+2069⟩⟨U+061C⟩",
        "a\x00b\x0ec": "a⟨NUL⟩b⟨U+000E⟩c",
        "split\x1b": "split⟨ESC⟩",
        "[@click=app.quit]x[/]": "[@click=app.quit]x[/]",  # markup is text here
    }
    for raw, shown in cases.items():
        assert visible(raw, one_line=True) == shown
