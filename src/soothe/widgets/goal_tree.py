"""GoalTree: the goal DAG as a tree of goals, sub-goals and their steps.

Nodes are created once and updated in place (a status change repaints one line); labels
are drawn at render time from the current GoalView, so the spinner and theme changes cost
nothing but a repaint of the affected lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.css.styles import RenderStyles
from textual.message import Message
from textual.scrollbar import ScrollDown, ScrollTo, ScrollUp
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from soothe.widgets.icons import status_icon
from soothe.widgets.sized import StyledPerFrame

if TYPE_CHECKING:
    from soothe.engine.views import GoalView

NodeKind = Literal["root", "conversation", "goal", "step"]

STATUSES = (
    "pending",
    "active",
    "completed",
    "validated",
    "failed",
    "suspended",
    "blocked",
    "awaiting_clarification",
    "cancelled",
    "skipped",
)


@dataclass
class NodeRef:
    kind: NodeKind
    goal_id: str | None = None
    step_id: str | None = None

    @property
    def key(self) -> str:
        """The stream key this node shows: ``conversation``, ``G1`` or ``G1/S2``."""
        if self.kind == "goal":
            return self.goal_id or ""
        if self.kind == "step":
            return f"{self.goal_id}/{self.step_id}"
        return "conversation"


PRIORITY = Binding.Group("Priority", compact=True)


class GoalTree(StyledPerFrame, Tree[NodeRef], inherit_bindings=False):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "command('new')", "New goal", id="tree.new_goal"),
        Binding("d", "command('depend')", "Depends on", id="tree.add_dependency"),
        Binding("D", "command('undepend')", "Drop dependency", id="tree.remove_dependency"),
        Binding("x", "command('cancel')", "Cancel", id="tree.cancel"),
        Binding("s", "command('suspend')", "Suspend", id="tree.suspend"),
        Binding("s", "command('resume')", "Resume", id="tree.resume"),
        Binding("r", "command('retry')", "Retry", id="tree.retry"),
        Binding("b", "command('budget')", "Budget", show=False, id="tree.budget"),
        Binding("e", "command('criteria')", "Done when", show=False, id="tree.criteria"),
        Binding(
            "plus",
            "command('priority_up')",
            "Priority up",
            key_display="+",
            id="tree.priority_up",
            group=PRIORITY,
        ),
        Binding(
            "minus",
            "command('priority_down')",
            "Priority down",
            key_display="-",
            id="tree.priority_down",
            group=PRIORITY,
        ),
        Binding("enter", "command('details')", "Details", id="tree.details"),
        Binding("enter", "command('steer')", "Steer", id="tree.steer"),
        Binding("up,k", "cursor_up", "Up", show=False, id="tree.cursor_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="tree.cursor_down"),
        Binding("space", "toggle_node", "Fold", show=False, id="tree.toggle"),
        Binding("left,shift+left", "cursor_parent", "Parent", show=False, id="tree.parent"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = Tree.COMPONENT_CLASSES | {
        *(f"goal-tree--{status}" for status in STATUSES),
        "goal-tree--id",
        "goal-tree--muted",
        "goal-tree--conversation",
    }

    DEFAULT_CSS = """
    GoalTree {
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
        & > .goal-tree--pending { color: $foreground-muted; }
        & > .goal-tree--active { color: $warning; text-style: bold; }
        & > .goal-tree--completed { color: $success; }
        & > .goal-tree--validated { color: $success; }
        & > .goal-tree--failed { color: $error; text-style: bold; }
        & > .goal-tree--suspended { color: $secondary; }
        & > .goal-tree--blocked { color: $foreground-muted; }
        & > .goal-tree--awaiting_clarification { color: $accent; text-style: bold; }
        & > .goal-tree--cancelled { color: $foreground-muted; }
        & > .goal-tree--skipped { color: $foreground-muted; }
        & > .goal-tree--id { color: $foreground-muted; }
        & > .goal-tree--muted { color: $foreground-muted; }
        & > .goal-tree--conversation { color: $primary; text-style: bold; }
    }
    """

    class Command(Message):
        """A goal command from the keyboard (``new``, ``cancel``, ``details``...)."""

        def __init__(self, command: str, goal_id: str | None, step_id: str | None = None) -> None:
            super().__init__()
            self.command = command
            self.goal_id = goal_id
            self.step_id = step_id
            """The step under the cursor, when it is on a step (details shows that step)."""

    class UserScrolled(Message):
        """The user scrolled the tree itself (the wheel over it, its scrollbar), not its
        cursor: the app holds off moving it, as after a cursor move."""

    class StreamChosen(Message):
        """The cursor moved to a node: show its stream."""

        def __init__(self, ref: NodeRef) -> None:
            super().__init__()
            self.ref = ref

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        self._component_cache: dict[
            tuple[str, ...], tuple[tuple[RenderStyles | None, ...], RenderStyles]
        ] = {}
        """Merged component styles, with the sources they were merged from (held, so a
        new source is never taken for a freed one at the same address)."""
        self._label_styles: dict[str, Style] = {}
        self._partial_cache: dict[tuple[str, ...], tuple[RenderStyles, Style]] = {}
        self._labels_width = 0
        super().__init__("goals", data=NodeRef("root"), id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = False
        self.spinner_tick: int | None = 0
        self._goals: dict[str, GoalView] = {}
        self._goal_nodes: dict[str, TreeNode[NodeRef]] = {}
        self._step_nodes: dict[tuple[str, str], TreeNode[NodeRef]] = {}
        self._awaiting: dict[str, dict[str, str]] = {}
        """Per goal, what its steps wait for from the user (approval or clarification), by
        step id ("" for the goal itself); a goal is here only while something waits."""
        self.conversation = self.root.add_leaf("Conversation", NodeRef("conversation"))
        self.root.expand()

    # -- queries ---------------------------------------------------------------------------

    def goal(self, goal_id: str) -> GoalView | None:
        return self._goals.get(goal_id)

    def display_status(self, goal_id: str) -> str:
        goal = self.goal(goal_id)
        if goal is None:
            return "pending"
        if goal_id in self._awaiting and goal.status not in ("completed", "failed", "cancelled"):
            return "awaiting_clarification"
        return goal.status

    @property
    def selected_ref(self) -> NodeRef:
        node = self.cursor_node
        return node.data if node is not None and node.data is not None else NodeRef("conversation")

    def node_for(self, ref: NodeRef) -> TreeNode[NodeRef] | None:
        if ref.kind == "goal" and ref.goal_id:
            return self._goal_nodes.get(ref.goal_id)
        if ref.kind == "step" and ref.goal_id and ref.step_id:
            return self._step_nodes.get((ref.goal_id, ref.step_id))
        return self.conversation

    # -- updates ---------------------------------------------------------------------------

    def upsert_goal(self, goal: GoalView) -> None:
        node = self._goal_nodes.get(goal.id)
        old = self._goals.get(goal.id)
        if node is not None and old == goal:  # the same view again: nothing to redraw
            return
        if node is not None and old is not None and old.parent_id != goal.parent_id:
            self.remove_goal(goal.id)
            node = None
        self._goals[goal.id] = goal
        if node is None:
            parent = self._goal_nodes.get(goal.parent_id or "", self.root)
            node = parent.add(goal.id, NodeRef("goal", goal.id), expand=True)
            if parent is not self.root:
                parent.expand()
            self._goal_nodes[goal.id] = node
        self._sync_steps(goal, node)
        node.refresh()
        if old is None or old.status != goal.status:
            self.refresh_bindings()

    def _sync_steps(self, goal: GoalView, node: TreeNode[NodeRef]) -> None:
        wanted = {step.id for step in goal.steps}
        for key in [k for k in self._step_nodes if k[0] == goal.id and k[1] not in wanted]:
            self._step_nodes.pop(key).remove()
        previous: TreeNode[NodeRef] | None = None
        for step in goal.steps:
            key = (goal.id, step.id)
            step_node = self._step_nodes.get(key)
            if step_node is None:
                # keep steps before sub-goals, in plan order
                if previous is not None:
                    step_node = node.add_leaf(
                        step.id, NodeRef("step", goal.id, step.id), after=previous
                    )
                else:
                    step_node = node.add_leaf(step.id, NodeRef("step", goal.id, step.id), before=0)
                self._step_nodes[key] = step_node
            else:
                step_node.refresh()
            previous = step_node

    def remove_goal(self, goal_id: str) -> None:
        node = self._goal_nodes.pop(goal_id, None)
        self._goals.pop(goal_id, None)
        self._awaiting.pop(goal_id, None)
        for key in [k for k in self._step_nodes if k[0] == goal_id]:
            del self._step_nodes[key]
        if node is None:
            return
        for child_id in [gid for gid, n in self._goal_nodes.items() if n.parent is node]:
            self.remove_goal(child_id)
        node.remove()

    def clear_goals(self) -> None:
        for goal_id in [g for g, n in self._goal_nodes.items() if n.parent is self.root]:
            self.remove_goal(goal_id)
        self._goals.clear()
        self._goal_nodes.clear()
        self._step_nodes.clear()
        self._awaiting.clear()
        self.move_cursor(self.conversation)

    def set_awaiting(self, goal_id: str, waits: Mapping[str, str]) -> None:
        """What the goal's steps wait for from the user, by step id ("" for the goal
        itself); empty when nothing waits any more."""
        before = self._awaiting.pop(goal_id, {})
        if waits:
            self._awaiting[goal_id] = dict(waits)
        nodes = [self._goal_nodes.get(goal_id)]
        nodes += [self._step_nodes.get((goal_id, s)) for s in {*before, *waits} if s]
        for node in nodes:
            if node is not None:
                node.refresh()

    def advance_spinner(self) -> None:
        if self.spinner_tick is None:
            return
        self.spinner_tick += 1
        for goal_id, goal in self._goals.items():
            if goal.status == "active":
                self._goal_nodes[goal_id].refresh()
            for step in goal.steps:
                if step.status == "active":
                    node = self._step_nodes.get((goal_id, step.id))
                    if node is not None:
                        node.refresh()

    def reveal(self, goal_id: str) -> None:
        """Scroll the goal's line into view, the cursor left where it is (once the tree's
        lines include it: after the refresh that lays them out)."""
        if goal_id in self._goal_nodes:
            self.call_after_refresh(self._scroll_to_goal, goal_id)

    def _scroll_to_goal(self, goal_id: str) -> None:
        node = self._goal_nodes.get(goal_id)
        if node is not None:
            _ = self._tree_lines  # laid out now: the node's line and the virtual size
            self.scroll_to_node(node, animate=False)

    def _user_scrolled(self) -> None:
        self.post_message(self.UserScrolled())

    def on_mouse_scroll_down(self) -> None:
        self._user_scrolled()

    def on_mouse_scroll_up(self) -> None:
        self._user_scrolled()

    def on_scroll_to(self, message: ScrollTo) -> None:
        """The scrollbar's thumb dragged."""
        self._user_scrolled()

    def on_scroll_up(self, message: ScrollUp) -> None:
        """A click on the scrollbar's track above its thumb."""
        self._user_scrolled()

    def on_scroll_down(self, message: ScrollDown) -> None:
        """A click on the scrollbar's track below its thumb."""
        self._user_scrolled()

    def show_ref(self, ref: NodeRef) -> None:
        node = self.node_for(ref)
        if node is not None:
            self.move_cursor(node)

    # -- rendering -------------------------------------------------------------------------

    def _depth(self, node: TreeNode[NodeRef]) -> int:
        depth = 0
        parent = node.parent
        while parent is not None and parent is not self.root:
            depth += 1
            parent = parent.parent
        return depth

    def get_component_styles(self, *names: str) -> RenderStyles:
        """Textual merges a fresh copy of the component's styles on every call, and a tree
        line (drawn again at each spinner turn) asks for several: keep each merge until the
        stylesheet replaces the component's styles (a theme change, a CSS update)."""
        sources = tuple(self._component_styles.get(name) for name in names)
        cached = self._component_cache.get(names)
        if cached is not None and all(a is b for a, b in zip(cached[0], sources, strict=True)):
            return cached[1]
        styles = super().get_component_styles(*names)
        self._component_cache[names] = (sources, styles)
        return styles

    def get_component_rich_style(
        self, *names: str, partial: bool = False, default: Style | None = None
    ) -> Style:
        """A partial style depends only on the component's merged styles (kept above):
        keep it as long as they are kept. Textual's own cache of these is emptied by every
        refresh (each spinner turn), and refilling it takes the full style too, which
        walks every ancestor: four of them were a third of a tree line's drawing."""
        if not partial:
            return super().get_component_rich_style(*names, partial=partial, default=default)
        try:
            styles = self.get_component_styles(*names)
        except KeyError:
            if default is not None:
                return default
            raise
        cached = self._partial_cache.get(names)
        if cached is not None and cached[0] is styles:
            return cached[1]
        style = styles.partial_rich_style
        self._partial_cache[names] = (styles, style)
        return style

    def notify_style_update(self) -> None:
        self._partial_cache.clear()
        self._component_cache.clear()
        self._label_styles.clear()
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        style = self._label_styles.get(name)
        if style is None:
            style = self._label_style(name)
            if style:  # not the null style of a widget the stylesheet has not reached yet
                self._label_styles[name] = style
        return style

    def _label_style(self, name: str) -> Style:
        component = f"goal-tree--{name}"
        try:
            style = self.get_component_rich_style(component, partial=True)
            color = self.get_component_styles(component).color
        except KeyError:  # measured before the stylesheet reached the widget
            return Style.null()
        if color.auto or color.a < 1:
            # $text-muted is "auto 60%": resolve and blend it over the tree's background,
            # which a partial Rich style cannot do by itself
            background = self.background_colors[1]
            if color.auto:
                color = background.get_contrast_text(color.a)
            style += Style(color=(background + color).rich_color)
        return style

    def render_line(self, y: int) -> Strip:
        # as Tree's, with the style taken once per frame (Tree's reads it for each line)
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        return self._render_line(y + scroll_y, scroll_x, scroll_x + width, self.frame_style)

    def render_label(self, node: TreeNode[NodeRef], base_style: Style, style: Style) -> Text:
        ref = node.data or NodeRef("root")
        width = self.scrollable_content_region.width or self.size.width or 80
        room = max(8, width - self._depth(node) * self.guide_depth)
        if ref.kind == "goal" and ref.goal_id in self._goals:
            text = self._goal_label(self._goals[ref.goal_id], node, room)
        elif ref.kind == "step" and ref.goal_id in self._goals:
            text = self._step_label(ref, room)
        else:
            text = Text.assemble(("◆ ", self._style("conversation")), "Conversation")
        text.stylize_before(style)
        return text

    def _badges(self, goal: GoalView, node: TreeNode[NodeRef], compact: bool) -> str:
        badges: list[str] = []
        if "approval" in self._awaiting.get(goal.id, {}).values():
            badges.append("approval?")
        if goal.depends_on:
            after = ",".join(goal.depends_on)
            badges.append(f"←{after}" if compact else f"after {after}")
        badges.append(f"p{goal.priority}")
        if node.children and not node.is_expanded:
            badges.append(f"+{len(node.children)}")
        return " " + " ".join(badges)

    def _goal_label(self, goal: GoalView, node: TreeNode[NodeRef], room: int) -> Text:
        status = self.display_status(goal.id)
        icon = status_icon(status, self.spinner_tick if status == "active" else None)
        head = f"{icon} {goal.id} "
        badge_text = self._badges(goal, node, compact=False)
        left = room - len(head) - len(badge_text)
        if left < 10:
            badge_text = self._badges(goal, node, compact=True)
            left = room - len(head) - len(badge_text)
        description = _fit(goal.description, left) if left > 0 else ""
        desc_style = self._style(status) if status in ("failed", "cancelled") else Style.null()
        text = Text.assemble(
            (icon, self._style(status)),
            " ",
            (goal.id, self._style("id")),
            " ",
            (description, desc_style),
            (badge_text, self._style("muted")),
        )
        if status == "cancelled":
            text.stylize("strike", len(head), len(head) + len(description))
        return text

    def _step_label(self, ref: NodeRef, room: int) -> Text:
        goal = self._goals[ref.goal_id or ""]
        step = next((s for s in goal.steps if s.id == ref.step_id), None)
        if step is None:
            return Text(ref.step_id or "")
        status: str = step.status
        if status == "active" and step.id in self._awaiting.get(goal.id, {}):
            status = "awaiting"  # as its goal's "?" says: the user's turn
        elif status == "pending" and goal.status == "suspended":
            # paused with its goal (an interrupted step is pending again in the store and
            # resumes from its checkpoint): nothing here runs until the goal is resumed
            status = "suspended"
        icon = status_icon(status, self.spinner_tick, step=True)
        kind = " ask" if step.kind == "ask_user" else ""
        head = f"{icon} {step.id} "
        left = room - len(head) - len(kind)
        description = _fit(step.description, left) if left > 0 else ""
        return Text.assemble(
            (icon, self._style("awaiting_clarification" if status == "awaiting" else status)),
            " ",
            (step.id, self._style("id")),
            " ",
            (description, self._style("muted") if step.status == "pending" else Style.null()),
            (kind, self._style("awaiting_clarification")),
        )

    def on_resize(self, event: events.Resize) -> None:
        """Labels are fitted to the width: draw them again when it changes. Tree's own
        handler (replaced here) also lays out the screen at every Resize, and the tree
        gets one whenever a node is added (its virtual size grew): a second layout of a
        streaming screen at each step start."""
        event.prevent_default()
        self._line_cache.grow(event.size.height)
        width = self.scrollable_content_region.width  # what render_label fits to
        if width != self._labels_width:
            self._labels_width = width
            self._invalidate()

    # -- keys ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``s`` reads Suspend or Resume for the goal under the cursor (the footer shows one)."""
        if action == "command" and parameters and parameters[0] in ("suspend", "resume"):
            ref = self.selected_ref
            goal = self.goal(ref.goal_id or "") if ref.kind in ("goal", "step") else None
            suspended = goal is not None and goal.status == "suspended"
            return suspended == (parameters[0] == "resume")
        if action == "command" and parameters and parameters[0] in ("details", "steer"):
            # enter on a running goal (its row, not a step's) writes it a note
            ref = self.selected_ref
            goal = self.goal(ref.goal_id or "") if ref.kind == "goal" else None
            running = goal is not None and goal.status == "active"
            return running == (parameters[0] == "steer")
        return True

    def action_command(self, command: str) -> None:
        ref = self.selected_ref
        goal_id = ref.goal_id if ref.kind in ("goal", "step") else None
        step_id = ref.step_id if ref.kind == "step" else None
        self.post_message(self.Command(command, goal_id, step_id))

    def action_cursor_parent(self) -> None:
        node = self.cursor_node
        if node is not None and node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def _on_tree_node_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        event.stop()
        self.refresh_bindings()
        if event.node.data is not None:
            self.post_message(self.StreamChosen(event.node.data))

    def _on_tree_node_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        event.stop()


def _fit(text: str, width: int) -> str:
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    return text[: width - 1] + "…" if width > 1 else "…"
