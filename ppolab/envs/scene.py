"""What a video needs around a robot: a sky, a checker floor, light, and a camera that follows.

Physics never sees any of it but the floor plane, whose contact properties are
MuJoCo's defaults, set on the geom itself: a model's own default class (Menagerie's Apollo
makes every geom frictionless, condim 1, and adds explicit foot-floor pairs, which a robot
file's model drops) never reaches ppolab's floor. Textures, materials, lights and cameras only
change pixels.
"""

from __future__ import annotations

import mujoco

# MuJoCo's own defaults for a geom's contact, written out: with friction (condim 3), soft as MuJoCo makes it
FLOOR_CONTACT = {"condim": 3, "friction": [1.0, 0.005, 0.0001], "solref": [0.02, 1.0], "solimp": [0.9, 0.95, 0.001,
                 0.5, 2.0], "solmix": 1.0, "margin": 0.0, "gap": 0.0, "priority": 0}  # fmt: skip


def add_sky(spec: mujoco.MjSpec) -> None:
    spec.add_texture(
        name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.55, 0.7, 0.85], rgb2=[0.1, 0.12, 0.15], width=128, height=128,
    )  # fmt: skip


def add_floor(spec: mujoco.MjSpec, collides: bool = True) -> mujoco.MjsGeom:
    """An infinite plane named "floor" with a 1 m checker, so that speed and distance can be read off a video."""
    spec.add_texture(
        name="checker", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.32, 0.36, 0.42], rgb2=[0.22, 0.25, 0.3], width=256, height=256, mark=mujoco.mjtMark.mjMARK_EDGE,
        markrgb=[0.6, 0.6, 0.65],
    )  # fmt: skip
    material = spec.add_material(name="floor", texrepeat=[1, 1], texuniform=True, reflectance=0.15)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "checker"
    bits = 1 if collides else 0
    return spec.worldbody.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], material="floor",
        contype=bits, conaffinity=bits, **FLOOR_CONTACT,
    )  # fmt: skip


def add_lights(spec: mujoco.MjSpec) -> None:
    spec.worldbody.add_light(
        pos=[0, 0, 4], dir=[0, 0.3, -1], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, diffuse=[0.7, 0.7, 0.7],
        castshadow=True,
    )  # fmt: skip
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.3, 0.3, 0.3]


def add_tracking_camera(body: mujoco.MjsBody, distance: float = 3.0, height: float = 0.3) -> None:
    """A side view that keeps the body's subtree centre of mass in the middle of the frame."""
    body.add_camera(
        name="track", pos=[0.0, -distance, height], xyaxes=[1, 0, 0, 0, 0.1, 1],
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM,
    )  # fmt: skip


def add_scene(spec: mujoco.MjSpec, track: mujoco.MjsBody, size: float = 0.85) -> None:
    """Sky, floor, light and a tracking camera (the env's first camera, which videos use), as far from the
    robot as its `size` (its root's standing height, m) asks: JVRC-1's 0.85 m gives 3 m."""
    add_sky(spec)
    add_floor(spec)
    add_lights(spec)
    add_tracking_camera(track, distance=3.5 * size, height=0.35 * size)
