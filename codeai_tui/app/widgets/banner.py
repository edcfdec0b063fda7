"""The as-of / trouble banner: time travel and ledger trouble say so above the panes."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.cells import cell
from codeai_tui.console.session import CaseSession


@dataclass(frozen=True)
class BannerFacts:
    trouble: str | None = None
    state: str = ""
    as_of: int | None = None  # wanted
    shown_as_of: int | None = None  # on screen
    max_seq: int = 0


def session_banner(session: CaseSession) -> BannerFacts:
    """The banner's facts from the console's session."""
    shown = session.shown
    return BannerFacts(trouble=session.trouble, state=session.state, as_of=session.as_of,
                       shown_as_of=shown.as_of if shown is not None else None,
                       max_seq=session.max_seq)


class Banner(Static):
    DEFAULT_CSS = """
    Banner { height: auto; padding: 0 1; text-style: bold; display: none; }
    Banner.-as-of { background: $warning; color: $background; display: block; }
    Banner.-trouble { background: $error; color: $background; display: block; }
    """

    facts: reactive[BannerFacts] = reactive(BannerFacts(), init=False)

    def watch_facts(self, f: BannerFacts) -> None:
        self.set_class(bool(f.trouble), "-trouble")
        self.set_class(not f.trouble and f.as_of is not None, "-as-of")
        if f.trouble:
            self.update(Content.assemble(
                ("\u2716 LEDGER ", "bold"), (f.state.upper(), "bold"), ": ",
                cell(f.trouble, 200),
                "  \u2014 panes show the last state read; retrying every second."))
        elif f.as_of is not None and f.shown_as_of != f.as_of:
            shown = "LIVE" if f.shown_as_of is None else f"seq {f.shown_as_of:,}"
            self.update(Content.assemble(
                (f"\u23f2 GOING TO seq {f.as_of:,} of {f.max_seq:,}", "bold"),
                "  \u2014 re-projecting; the panes below still show ", (shown, "bold"),
                " until it is done.  t or esc: back to live"))
        elif f.as_of is not None:
            self.update(Content.assemble(
                (f"\u23f2 AS OF seq {f.as_of:,} of {f.max_seq:,}", "bold"),
                " \u2014 every pane and the header show the projection up to this event. "
                "[ ] step \u00b7 t/esc: live"))
