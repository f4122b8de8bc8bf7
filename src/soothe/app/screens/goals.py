"""The goal tree's dialogs: a new goal, the goal it waits for, everything about one goal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from soothe.app.screens.base import BOX_CSS, CLOSE
from soothe.widgets.budget import budget_rows
from soothe.widgets.criteria import CriteriaArea, criteria_block, criteria_lines
from soothe.widgets.icons import STATUS_WORDS, status_icon

CRITERIA_LEAD = "Done when (optional; one criterion per line, ctrl+s adds from here):"

if TYPE_CHECKING:
    from soothe.engine.views import GoalView


class GoalInputDialog(ModalScreen[str | None]):
    """n in the goal tree: describe a new goal (and, with ``criteria`` given, its
    done-when criteria, one per line: read them with ``criteria``)."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE
    DEFAULT_CSS = (
        BOX_CSS.format(name="GoalInputDialog")
        + """
    GoalInputDialog CriteriaArea { height: 5; margin-bottom: 1; }
    """
    )

    def __init__(
        self,
        title: str = "New goal",
        lead: str = "What should be achieved?",
        placeholder: str = "e.g. Summarise the README",
        enter: str = "adds",
        criteria: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.lead = lead
        self.placeholder = placeholder
        self.enter = enter
        self.with_criteria = criteria is not None
        self.initial_criteria = list(criteria or ())

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            box.border_subtitle = f"enter {self.enter} · esc cancels"
            yield Static(self.lead, classes="lead")
            yield Input(placeholder=self.placeholder, id="goal-text")
            if self.with_criteria:
                yield Static(CRITERIA_LEAD, classes="lead")
                yield CriteriaArea("\n".join(self.initial_criteria), id="goal-criteria")

    def criteria(self) -> list[str]:
        """The done-when criteria written (none without the field)."""
        if not self.with_criteria:
            return []
        return criteria_lines(self.query_one(CriteriaArea).text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text:
            self.dismiss(text)

    def on_criteria_area_save(self, event: CriteriaArea.Save) -> None:
        event.stop()
        text = self.query_one("#goal-text", Input).value.strip()
        if text:
            self.dismiss(text)
        else:
            self.query_one("#goal-text", Input).focus()

    def action_close(self) -> None:
        self.dismiss(None)


class DependencyDialog(ModalScreen[str | None]):
    """d in the goal tree: pick the goal this one waits for (D: one it stops waiting for)."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE
    DEFAULT_CSS = (
        BOX_CSS.format(name="DependencyDialog")
        + """
    DependencyDialog OptionList { height: auto; max-height: 16; margin-bottom: 1; }
    """
    )

    def __init__(
        self, goal: GoalView, candidates: list[GoalView], *, removing: bool = False
    ) -> None:
        super().__init__()
        self.goal = goal
        self.candidates = candidates
        self.removing = removing

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            verb = "stops waiting for" if self.removing else "waits for"
            box.border_title = f"{self.goal.id} {verb}…"
            box.border_subtitle = "enter picks · esc cancels"
            lead = "no longer waits for:" if self.removing else "starts only after:"
            yield Static(
                Content(f"{self.goal.id} {self.goal.description}\n{lead}"),
                classes="lead",
            )
            yield OptionList(
                *(
                    Option(
                        Content.assemble(
                            (f"{status_icon(g.status, None)} ", "$text-muted"),
                            (g.id, "bold"),
                            f" {g.description}",
                        ),
                        id=g.id,
                    )
                    for g in self.candidates
                ),
                id="candidates",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)


class GoalDetailDialog(ModalScreen[None]):
    """enter in the goal tree: everything known about one goal (on a step: that goal, its
    step marked, with what its card knows of it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "close", "Close", id="dialog.close")
    ]
    DEFAULT_CSS = (
        BOX_CSS.format(name="GoalDetailDialog")
        + """
    GoalDetailDialog VerticalScroll { height: auto; max-height: 30; }
    GoalDetailDialog .step-row { height: auto; }
    GoalDetailDialog .step-row > .step-mark { width: auto; padding-left: 2; }
    GoalDetailDialog .step-row > .step-text { width: 1fr; padding-left: 1; }
    GoalDetailDialog .step-row.-chosen { background: $boost; text-style: bold; }
    GoalDetailDialog .step-facts { color: $text-muted; padding-left: 4; }
    """
    )

    def __init__(
        self,
        goal: GoalView,
        answer: str = "",
        evidence: int = 0,
        *,
        step_id: str | None = None,
        step_facts: str = "",
    ) -> None:
        super().__init__()
        self.goal = goal
        self.answer = answer
        self.evidence_count = evidence
        self.step_id = step_id if any(s.id == step_id for s in goal.steps) else None
        """The step the cursor was on, marked in the list."""
        self.step_facts = step_facts
        """What the chosen step's card knows (tokens, time, its error), one line."""

    def compose(self) -> ComposeResult:
        goal = self.goal
        rows: list[tuple[str, str]] = [
            ("status", STATUS_WORDS.get(goal.status, goal.status)),
            ("priority", str(goal.priority)),
            ("after", ", ".join(goal.depends_on) or "—"),
            ("parent", goal.parent_id or "—"),
            ("evidence", str(self.evidence_count)),
            *budget_rows(goal.budget, goal.spent),
        ]
        parts: list[tuple[str, str] | str | Content] = [(goal.description + "\n\n", "bold")]
        for name, value in rows:
            parts += [(f"{name:<10}", "$text-muted"), value, "\n"]
        if goal.criteria:  # ✓ / ✗ / ? per criterion, with the evidence it rests on
            parts.append(criteria_block(goal.criteria))
        if goal.steps:
            parts.append(("\nsteps", "$text-muted"))
        tail: list[tuple[str, str] | str] = []
        if goal.findings and goal.findings.strip() != self.answer.strip():
            # the completed goal's findings are its answer: shown once, below
            tail += [("\nfindings\n", "$text-muted"), goal.findings + "\n"]
        if goal.error:
            tail += [("\nerror\n", "$error"), goal.error + "\n"]
        if self.answer:
            tail += [("\nanswer\n", "$text-muted"), self.answer + "\n"]
        with Vertical() as box:
            box.border_title = f"Goal {goal.id}" + (
                f" · step {self.step_id}" if self.step_id else ""
            )
            box.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(Content.assemble(*parts))
                for step in goal.steps:
                    chosen = step.id == self.step_id
                    icon = status_icon(step.status, None, step=True)
                    after = f"  (after {', '.join(step.dependencies)})" if step.dependencies else ""
                    # the text in a column of its own: a long description wraps under
                    # itself, not under the step's id
                    with Horizontal(classes="step-row" + (" -chosen" if chosen else "")):
                        yield Static(Content(f"{icon} {step.id}"), classes="step-mark")
                        yield Static(Content(step.description + after), classes="step-text")
                    if chosen and self.step_facts:
                        yield Static(Content(self.step_facts), classes="step-facts")
                if tail:
                    yield Static(Content.assemble(*tail))

    def on_mount(self) -> None:
        chosen = self.query(".step-row.-chosen")
        if chosen:
            self.call_after_refresh(chosen.first().scroll_visible, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
