"""4 Compilations: stage, next operation and what a failed one is missing."""

from __future__ import annotations

from codeai_tui.app.widgets.cells import WARN, cell
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.sources import LazySource
from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.workstate import CompilationState, NextOperation

COMPILATION_COLUMNS = [Column("compilation", 11, ident=True), Column("stage", 9), Column("next op", 10),
                       Column("offered", 7), Column("missing required", 24)]


def compilation_row(comp: CompilationState) -> Row:
    missing = ", ".join(cell(m, 40) for m in comp.missing_required)
    tone = "warn" if comp.missing_required or comp.next_operation is not NextOperation.NONE \
        else ""
    return Row(comp.compilation_id,
               (cell(comp.compilation_id), comp.stage.value, comp.next_operation.value,
                str(len(comp.offered)), (f"{WARN} " + missing) if missing else ""), tone)


class CompilationsPane(Pane):
    TITLE = "Compilations"
    KEY = "4"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(COMPILATION_COLUMNS, empty_text="no compilations", **kwargs)  # type: ignore[arg-type]

    def paint(self) -> None:
        comps = self.snapshot.state.compilations if self.snapshot else ()
        self.set_source(LazySource(comps, compilation_row, lambda c: c.compilation_id,
                                   self.rows_filtered(comps, compilation_row)))
        super().paint()

    def compilation_at_cursor(self) -> CompilationState | None:
        source = self.source
        return source.item_at(self.cursor) if isinstance(source, LazySource) else None
