"""The viewer's keyboard: what each key tells the policy, kept apart from the window so that it is tested alone.

A walker's command follows the modes its task declares (standing, in place, forward): the arrow keys change
its speed and turn it, Enter switches between standing and walking. A stepper's plan kind cycles with Page
Down. Space pauses, Backspace starts a new episode. MuJoCo's viewer leaves these keys alone while another
program steps the physics (its own letters toggle what is drawn; F1 lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# GLFW's key codes, which MuJoCo's viewer passes to its key callback
UP, DOWN, LEFT, RIGHT, ENTER, SPACE, BACKSPACE, PAGE_DOWN = 265, 264, 263, 262, 257, 32, 259, 267
SPEED_STEP = 0.05  # m/s a press
TURN_STEP = 0.1  # rad/s a press
MIN_SPEED = 0.1  # m/s: the slowest walk the shipped walkers train; below it, stepping in place
MAX_SPEED = 1.0  # m/s: beyond any shipped walker's training, so that a user can see where it stops coping
MAX_TURN = 1.0  # rad/s

KEYS_HELP = (
    ("Up / Down", "faster / slower"),
    ("Left / Right", "turn left / right (in place)"),
    ("Enter", "stand / walk"),
    ("Page Down", "next footstep plan"),
    ("Space", "pause"),
    ("Backspace", "reset"),
)
WALKER_KEYS = ("Up / Down", "Left / Right", "Enter")  # a task with a velocity command's
PLAN_KEYS = ("Page Down",)  # a task with footstep plans'


@dataclass(frozen=True)
class Steer:
    """What the policy is told now: a walker's mode and command, a stepper's plan; paused or not."""

    mode: str | None = None  # one of the task's modes; None: the task takes no velocity command
    vx: float = 0.0
    yaw_rate: float = 0.0
    plan: str | None = None
    paused: bool = False

    def describe(self) -> str:
        """One line for the overlay."""
        if self.plan is not None:
            told = f"footstep plan: {self.plan}"
        elif self.mode == "forward":
            told = f"walk forward at {self.vx:.2f} m/s"
        elif self.mode == "in_place":
            told = f"step in place, turning {self.yaw_rate:+.1f} rad/s"
        elif self.mode is not None:
            told = self.mode.replace("_", " ")
        else:
            told = "no command (the task takes none)"
        return told + ("  [paused]" if self.paused else "")


def press(state: Steer, key: int, modes: tuple[str, ...], plans: tuple[str, ...]) -> tuple[Steer, bool]:
    """The state after `key`, and whether the episode starts again (Backspace, or a new plan)."""
    if key == SPACE:
        return replace(state, paused=not state.paused), False
    if key == BACKSPACE:
        return state, True
    if key == PAGE_DOWN and plans:
        at = plans.index(state.plan) if state.plan in plans else -1
        return replace(state, plan=plans[(at + 1) % len(plans)]), True
    return _walker(state, key, set(modes)), False


def _walker(state: Steer, key: int, modes: set[str]) -> Steer:
    """A walker's keys: each moves the command within the modes the task has (others leave it as it is)."""
    walk, turn, stand = "forward" in modes, "in_place" in modes, "standing" in modes
    if key == UP and walk:
        vx = state.vx + SPEED_STEP if state.mode == "forward" else max(state.vx, MIN_SPEED)
        return replace(state, mode="forward", vx=round(min(vx, MAX_SPEED), 3), yaw_rate=0.0)
    if key == DOWN and state.mode == "forward" and state.vx - SPEED_STEP >= MIN_SPEED - 1e-9:
        return replace(state, vx=round(state.vx - SPEED_STEP, 3))
    if key == DOWN and state.mode == "forward" and turn:
        return replace(state, mode="in_place", vx=0.0, yaw_rate=0.0)
    if key == DOWN and state.mode == "in_place" and stand:
        return replace(state, mode="standing", yaw_rate=0.0)
    if key in (LEFT, RIGHT) and turn:
        rate = state.yaw_rate if state.mode == "in_place" else 0.0
        rate += TURN_STEP if key == LEFT else -TURN_STEP
        return replace(state, mode="in_place", vx=0.0, yaw_rate=round(max(-MAX_TURN, min(MAX_TURN, rate)), 3))
    if key == ENTER and stand and walk:
        if state.mode == "standing":
            return replace(state, mode="forward", vx=max(state.vx, MIN_SPEED), yaw_rate=0.0)
        return replace(state, mode="standing", yaw_rate=0.0)
    return state
