"""Frames of env 0 while `ppolab eval` scores its episodes: an mp4 as they come, and/or a filmstrip PNG.

The episode is simulated once: the recorder is the evaluation's per-step hook, and a frame is taken
while env 0's episode lasts. What the policy is told is drawn into the scene: a walker's commanded
direction (an arrow over its head: blue walking, yellow turning in place, a grey ball standing) and a
stepper's footstep targets (the current one red, the next orange, the rest grey).

Offscreen rendering on a CPU (Mesa's llvmpipe through EGL) is the cost: shadows and multisampling
took 85% of a 640 x 480 frame (benchmarks/README.md, "Videos"), so both are off; the floor's
reflection and the sky stay.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from ppolab.envs.protocol import Marker
from ppolab.errors import UserError
from ppolab.evaluation.markers import add_marker
from ppolab.util.files import temp_sibling
from ppolab.util.progress import Progress

SIZE = (480, 640)  # height, width


class Recorder:
    """`evaluate`'s on_step hook: renders env 0 after each step of its episode."""

    def __init__(self, env, *, video: Path | None, filmstrip: Path | None, frames: int, steps: int, fps: int) -> None:
        import imageio.v2 as imageio
        import mujoco

        self.mujoco, self.imageio = mujoco, imageio
        self.video, self.filmstrip = video, filmstrip
        env.model.vis.quality.offsamples = 0  # no multisampling: a third of a frame's time in software GL
        try:
            width = SIZE[1] if not filmstrip or video else SIZE[1] // 2
            self.renderer = mujoco.Renderer(env.model, height=SIZE[0], width=width)
        except Exception as exc:  # no GL: say which packages give one
            raise UserError(
                f"--video: offscreen rendering is unavailable ({exc}); install Debian's libegl1 and "
                "libgl1-mesa-dri (MUJOCO_GL=egl) or libosmesa6 (MUJOCO_GL=osmesa)"
            ) from None
        self.renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0  # shadows: over half a frame's time
        self.temps = [temp_sibling(p) for p in (video, filmstrip) if p is not None]
        for p in self.temps:
            p.parent.mkdir(parents=True, exist_ok=True)
        self.writer = None
        if video:
            self.writer = imageio.get_writer(temp_sibling(video), fps=fps, codec="libx264", macro_block_size=8)
        self.wanted = set(np.linspace(0, steps - 1, frames).round().astype(int).tolist())  # the strip's frames
        self.count, self.strip, self.last = 0, [], None
        self.spare, self.last_state = None, None  # a filmstrip's last frame, kept unrendered
        name = (video or filmstrip).name
        self.progress = Progress(f"Rendered episode 1 to {name}", steps, "frames")

    def __call__(self, env, alive: np.ndarray) -> None:
        if not alive[0]:  # env 0's episode has ended; the others may go on
            return
        if self.writer is None and self.count not in self.wanted:  # a filmstrip alone renders only its frames
            self._keep_last(env)
        else:
            self.last = self._render(env.datas[0], env.markers(0))
            self.last_state = None
            if self.writer is not None:
                self.writer.append_data(self.last)
            if self.filmstrip and self.count in self.wanted:
                self.strip.append(self._strip_frame(self.last))
        self.count += 1
        self.progress.advance()

    def _render(self, data, markers: list[Marker]) -> np.ndarray:
        self.renderer.update_scene(data, camera=0)
        for marker in markers:
            add_marker(self.renderer.scene, marker)
        return self.renderer.render()

    def _keep_last(self, env) -> None:
        """The state of a frame not rendered, kept should the episode end before the strip's next frame: the
        strip then ends on it, as a strip of every frame would."""
        if self.spare is None:
            self.spare = self.mujoco.MjData(env.model)
        self.mujoco.mj_copyData(self.spare, env.model, env.datas[0])
        self.last_state = (self.spare, env.markers(0))

    def _strip_frame(self, frame: np.ndarray) -> np.ndarray:
        """A filmstrip frame: the middle half of the width (the robot), the strip stays readable."""
        if self.writer is None:
            return frame.copy()
        quarter = frame.shape[1] // 4
        return frame[:, quarter : frame.shape[1] - quarter].copy()

    def finish(self) -> int:
        """Close the video, write the strip, and rename both into place; the episode's frame count."""
        try:
            if self.writer is not None:
                self.writer.close()
                self.writer = None
            if self.filmstrip:
                if len(self.strip) < len(self.wanted) and self.last_state is not None:  # ended early: its last frame
                    self.last = self._render(*self.last_state)
                    self.last_state = None
                if len(self.strip) < len(self.wanted) and self.last is not None:
                    self.strip.append(self._strip_frame(self.last))
                self.imageio.imwrite(temp_sibling(self.filmstrip), np.concatenate(self.strip, axis=1), format="png")
                os.replace(temp_sibling(self.filmstrip), self.filmstrip)
            if self.video:
                os.replace(temp_sibling(self.video), self.video)
        except OSError as exc:
            reason = exc.strerror or str(exc).splitlines()[0]
            raise UserError(f"--video {self.video or self.filmstrip}: cannot write it ({reason})") from None
        return self.count

    def close(self) -> None:
        """Whatever happened: the renderer and the encoder closed, no temp file left behind."""
        self.progress.close()
        with contextlib.suppress(Exception):
            if self.writer is not None:
                self.writer.close()
        self.renderer.close()
        for p in self.temps:
            p.unlink(missing_ok=True)
